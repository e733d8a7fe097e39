"""Transfer baselines: multi-task heads, fine-tuning from a model, and a chain's first anchor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tcl import model as models
from tcl.model.inputs import predict
from tcl.records import sample_data_path
from tcl.records.dataset import Dataset, load_dataset
from tcl.training import distill
from tcl.training.metrics import mean_task_topk
from tcl.training.train import TrainConfig, train
from tcl.training.transfer import MultiHeadModel, train_multitask

FAST = TrainConfig(max_steps=40, warmup_steps=5, programs_per_task=24)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load_dataset(sample_data_path())


def _config(data: Dataset) -> models.ModelConfig:
    return models.ModelConfig(vocab_size=len(data.records.vocab), d_model=16, n_layers=1)


def test_multitask_model_has_a_head_per_platform_and_learns(data: Dataset) -> None:
    config = _config(data)
    torch.manual_seed(0)  # the untrained baseline must not depend on the tests run before
    two, three = MultiHeadModel(config, 2), MultiHeadModel(config, 3)
    head = sum(p.numel() for p in two.heads[0].parameters())
    assert models.num_parameters(three) - models.num_parameters(two) == head  # grows by one head
    # Chance level: random scores (one untrained model's top-1 on 3 tasks is a coin toss).
    rng = np.random.default_rng(0)
    n = len(data.records)
    chance = np.mean([mean_task_topk(data, rng.random(n), k=1) for _ in range(50)])
    trained = train_multitask([data, data], config, FAST)
    score = mean_task_topk(data, predict(trained.for_platform(1), data.records), k=1)
    assert score > chance + 0.1, (score, chance)
    # The heads differ: each platform is ranked by its own.
    kinds, fields = torch.randint(1, 10, (3, 8)), torch.randn(3, 8, 10)
    assert not torch.equal(trained(kinds, fields, 0), trained(kinds, fields, 1))


def test_finetuning_starts_from_the_given_model_and_leaves_it_alone(data: Dataset) -> None:
    config = _config(data)
    base, _ = train(data, None, config, FAST, log=lambda *a: None)
    before = {n: p.detach().clone() for n, p in base.named_parameters()}
    tuned, _ = train(
        data, None, config, TrainConfig(max_steps=1, lr=0.0), init=base, log=lambda *a: None
    )
    for n, p in base.named_parameters():
        assert torch.equal(p, before[n])
    # One step at lr 0 keeps the starting weights: fine-tuning really starts from ``base``.
    for n, p in tuned.named_parameters():
        torch.testing.assert_close(p, before[n])


def test_chain_start_anchors_at_the_source_model(data: Dataset) -> None:
    torch.manual_seed(0)
    kb = models.build(_config(data))
    chain = distill.Chain.start(kb, "p1", data, distill.DistillConfig(fisher_batches=2))  # type: ignore[arg-type]
    assert chain.platforms == ["p1"] and set(chain.fisher) == set(chain.anchor)
    assert distill.ewc_penalty(chain.kb, chain.fisher, chain.anchor).item() == 0
    assert torch.cat([f.flatten() for f in chain.fisher.values()]).mean().item() == pytest.approx(
        1.0
    )
    bare = distill.Chain.start(kb, "p1")  # type: ignore[arg-type]
    assert bare.fisher == {} and bare.platforms == ["p1"]
