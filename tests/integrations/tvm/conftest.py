"""Fixtures of the MetaSchedule integration tests: a small trained tcl checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcl import model as models
from tcl.records import sample_data_path
from tcl.records.dataset import load_dataset
from tcl.training.train import TrainConfig, train


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Mamba model trained for 30 steps on the bundled sample records."""
    data = load_dataset(sample_data_path())
    config = models.ModelConfig(vocab_size=len(data.records.vocab), d_model=16, n_layers=1)
    net, _ = train(data, None, config, TrainConfig(max_steps=30), log=lambda *a: None)
    path = tmp_path_factory.mktemp("model") / "m.pt"
    models.save(path, net, data.records.vocab, data.records.tokenizer)
    return path
