"""Online fine-tuning on the tuner's measurements (tcl.training.online), on
the bundled real records."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tcl import model
from tcl.model import ModelConfig
from tcl.model.inputs import predict
from tcl.records import sample_data_path
from tcl.records.dataset import Dataset, load_dataset
from tcl.training.metrics import pairwise_accuracy
from tcl.training.online import OnlineConfig, OnlineTrainer

TINY = {"d_model": 16, "n_layers": 1, "d_state": 4, "dropout": 0.0}


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load_dataset(sample_data_path())


def _net(data: Dataset) -> torch.nn.Module:
    torch.manual_seed(0)
    return model.build(ModelConfig(vocab_size=len(data.records.vocab), **TINY))


def _feed(trainer: OnlineTrainer, data: Dataset, task: int) -> np.ndarray:
    rows = np.flatnonzero(data.records.columns["task"] == task)
    trainer.add(str(task), data.records.select(rows), data.records.columns["mean_cost"][rows])
    return rows


def test_without_steps_the_model_is_left_alone(data: Dataset) -> None:
    net = _net(data)
    before = copy.deepcopy(net.state_dict())
    trainer = OnlineTrainer(net, OnlineConfig(steps=0))
    _feed(trainer, data, 0)
    assert trainer.update("0") is None
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_steps_teach_the_measured_task_and_replay_the_others(data: Dataset) -> None:
    net = _net(data)
    trainer = OnlineTrainer(net, OnlineConfig(steps=100, lr=3e-3, programs_per_task=256))
    fed = {t: _feed(trainer, data, t) for t in (0, 1)}
    assert len(trainer.history["0"]) == len(fed[0])
    seen = data.subset(np.concatenate(list(fed.values())))
    before = pairwise_accuracy(seen, predict(net, seen.records))
    assert trainer.update("1") is not None and trainer.updates == 1
    after = pairwise_accuracy(seen, predict(net, seen.records))
    assert after > before + 0.05, (before, after)
    # task 0 was only replayed: it is learnt too
    task0 = data.subset(fed[0])
    assert pairwise_accuracy(task0, predict(net, task0.records)) > 0.6


def test_unmeasured_programs_are_not_stored(data: Dataset) -> None:
    trainer = OnlineTrainer(_net(data), OnlineConfig(steps=1))
    rows = np.flatnonzero(data.records.columns["task"] == 0)[:4]
    trainer.add("t", data.records.select(rows), np.array([np.nan, 1e-3, -1.0, 2e-3]))
    assert len(trainer.history["t"]) == 2
    trainer.add("u", data.records.select(rows[:1]), np.array([np.inf]))
    assert "u" not in trainer.history and trainer.update("u") is None


def test_a_platform_reading_model_learns_under_each_programs_descriptor(data: Dataset) -> None:
    from tcl.tuning.platforms import DESCRIPTOR_FEATURES, per_record_descriptors

    net = model.with_platform_input(_net(data), len(DESCRIPTOR_FEATURES))
    with torch.no_grad():
        net.encoder.platform.weight.normal_()  # type: ignore[union-attr]
    trainer = OnlineTrainer(net, OnlineConfig(steps=2, lr=1e-3, tasks_per_step=2))
    rows = {t: _feed(trainer, data, t) for t in (0, 1)}
    kinds, fields, platform = trainer._batch("0")[0]
    assert len(kinds) == len(fields) == len(platform)
    descriptors = per_record_descriptors(data.records)
    seen = np.unique(descriptors[np.concatenate(list(rows.values()))], axis=0)
    np.testing.assert_array_equal(np.unique(platform.numpy(), axis=0), seen)
    assert trainer.update("0") is not None
