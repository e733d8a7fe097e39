"""Ranking losses, top-k metrics and the training loop, on the bundled real measurements."""

from __future__ import annotations

import copy
import itertools
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from tcl import model
from tcl.cli import main
from tcl.model import ModelConfig
from tcl.model.inputs import predict
from tcl.records import sample_data_path
from tcl.records.dataset import Dataset, load_dataset
from tcl.training.losses import LOSSES, lambdarank
from tcl.training.metrics import evaluate, mean_task_topk, pairwise_accuracy, topk_score
from tcl.training.train import TrainConfig, search_drawn, task_groups, train

TINY = {"d_model": 16, "n_layers": 1, "d_state": 4, "dropout": 0.0}


@pytest.fixture(scope="module")
def data() -> Dataset:
    d = load_dataset(sample_data_path())
    # The sample has no manifest: give its three tasks to one network, with weights 1, 2, 3.
    d.networks = [{"net": w} for w in (1, 2, 3)]
    return d


def test_lambdarank_prefers_the_right_order() -> None:
    labels = torch.tensor([1.0, 0.5, 0.25, 0.1])
    right = lambdarank(torch.tensor([4.0, 3.0, 2.0, 1.0]), labels)
    wrong = lambdarank(torch.tensor([1.0, 2.0, 3.0, 4.0]), labels)
    assert right < wrong
    scores = torch.zeros(4, requires_grad=True)
    lambdarank(scores, labels).backward()
    assert (
        scores.grad is not None and scores.grad[0] < 0 < scores.grad[3]
    )  # descent raises the best
    assert lambdarank(torch.tensor([1.0]), torch.tensor([1.0])) == 0


def test_sharper_gains_weigh_swaps_among_the_best_programs_more() -> None:
    # Two near-best programs and two slow ones; one order swaps the best two, the other the
    # slowest two. The sharper the gains, the costlier the swap among the best against the
    # swap among the slow (plain LambdaRank's gains, 2**label - 1, differ little over [0, 1]).
    labels = torch.tensor([1.0, 0.9, 0.2, 0.1])
    top_swapped = torch.tensor([3.0, 4.0, 2.0, 1.0])
    bottom_swapped = torch.tensor([4.0, 3.0, 1.0, 2.0])

    def ratio(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> float:
        return float(loss(top_swapped, labels) / loss(bottom_swapped, labels))

    ratios = [ratio(partial(lambdarank, sharpness=s)) for s in (1.0, 2.0, 4.0, 8.0)]
    assert all(a < b for a, b in itertools.pairwise(ratios)), ratios
    assert ratio(LOSSES["lambdarank"]) == ratios[0]
    assert ratio(LOSSES["lambdarank-top"]) > 1.2 * ratios[0]


def test_topk_and_pairwise_on_oracle_and_reversed_scores(data: Dataset) -> None:
    costs = data.records.columns["mean_cost"]
    assert topk_score(data, -costs, "net", 1) == pytest.approx(1.0)
    assert pairwise_accuracy(data, -costs) == pytest.approx(1.0)
    assert pairwise_accuracy(data, costs) == pytest.approx(0.0)
    worst = topk_score(data, costs, "net", 1)
    groups = [costs[data.records.columns["task"] == t] for t in range(3)]
    expected = sum(w * g.min() for w, g in zip((1, 2, 3), groups, strict=True)) / sum(
        w * g.max() for w, g in zip((1, 2, 3), groups, strict=True)
    )
    assert worst == pytest.approx(expected)
    assert topk_score(data, costs, "net", 5) > worst
    result = evaluate(data, -costs, ["net"])
    assert result["top1"] == pytest.approx(1.0) and result["per_network"]["net"][
        "top5"
    ] == pytest.approx(1.0)


def test_training_learns_and_is_seeded(data: Dataset) -> None:
    config = ModelConfig(arch="mamba", vocab_size=len(data.records.vocab), **TINY)
    train_config = TrainConfig(
        max_steps=200, warmup_steps=5, eval_every=20, patience=10, programs_per_task=32, lr=5e-3
    )
    torch.set_num_threads(1)  # bitwise determinism across runs
    net, history = train(data, data, config, train_config, log=lambda *a: None)
    again, _ = train(data, data, config, train_config, log=lambda *a: None)
    for a, b in zip(net.state_dict().values(), again.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    scores = predict(net, data.records)
    random = np.random.default_rng(0).random(len(scores))
    assert pairwise_accuracy(data, scores) > pairwise_accuracy(data, random) + 0.2
    # It fits its training tasks: the top-ranked program is near each task's best.
    assert history["best_val_top1"] > max(0.8, mean_task_topk(data, random, 1))


class _Reversed(torch.nn.Module):
    """A teacher that ranks every task backwards: ``net``'s scores negated."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net, self.config = net, net.config

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return -self.net(*inputs)


def test_a_teacher_is_distilled_beside_the_measurements(data: Dataset) -> None:
    config = ModelConfig(arch="mamba", vocab_size=len(data.records.vocab), **TINY)
    train_config = TrainConfig(
        max_steps=200, warmup_steps=5, eval_every=20, patience=10, programs_per_task=32, lr=5e-3
    )
    torch.set_num_threads(1)  # bitwise determinism across runs
    quiet = {"log": lambda *a: None}
    net, _ = train(data, None, config, train_config, **quiet)
    teacher = _Reversed(net)
    # The teacher's share 0 leaves the training exactly as without it.
    unweighted, _ = train(
        data, None, config, train_config, teacher=teacher, teacher_weight=0.0, **quiet
    )
    for a, b in zip(net.state_dict().values(), unweighted.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # All of it: the student learns the teacher's order, here the measurements' reversed.
    student, _ = train(
        data, None, config, train_config, teacher=teacher, teacher_weight=1.0, **quiet
    )
    truth = pairwise_accuracy(data, predict(net, data.records))
    assert truth > 0.7
    assert pairwise_accuracy(data, predict(student, data.records)) < 1.0 - truth + 0.1
    with pytest.raises(ValueError, match=r"teacher_weight must lie in \[0, 1\], got 1.5"):
        train(data, None, config, train_config, teacher=teacher, teacher_weight=1.5, **quiet)


def test_training_on_a_gpu_that_is_not_there_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here")
    out = tmp_path / "m.pt"
    assert main(["train", str(sample_data_path()), "--out", str(out), "--device", "cuda"]) == 2
    assert "PyTorch sees no CUDA GPU here" in capsys.readouterr().err and not out.exists()


@pytest.mark.gpu
def test_training_and_scoring_on_a_gpu_agree_with_the_cpu(data: Dataset) -> None:
    """The same model scores alike on CUDA and on the CPU, and training on CUDA (the PyTorch
    twins of the kernels, or mamba_ssm's) learns what training on the CPU learns. Tolerances:
    cuDNN convolutions run in TF32 by default (10-bit mantissa, relative error ~1e-3), and
    20 optimizer steps in another summation order move the weights apart a little more."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here")
    config = ModelConfig(arch="mamba", vocab_size=len(data.records.vocab), **TINY)
    settings = TrainConfig(max_steps=20, warmup_steps=2, programs_per_task=32, lr=5e-3)
    on_cpu, _ = train(data, None, config, settings, log=lambda *a: None)
    on_gpu, _ = train(data, None, config, replace(settings, device="cuda"), log=lambda *a: None)
    assert all(p.device.type == "cpu" for p in on_gpu.parameters())  # it comes back
    cpu_scores = predict(on_cpu, data.records)
    scale = float(np.abs(cpu_scores).max())
    np.testing.assert_allclose(
        predict(copy.deepcopy(on_cpu).cuda(), data.records),
        cpu_scores,
        rtol=5e-3,
        atol=5e-3 * scale,
    )
    trained_on_gpu = predict(on_gpu, data.records)
    assert np.corrcoef(trained_on_gpu, cpu_scores)[0, 1] > 0.99


@pytest.mark.parametrize("arch", ["attention", "lstm"])
def test_baselines_train_in_the_same_harness(data: Dataset, arch: str) -> None:
    config = ModelConfig(arch=arch, vocab_size=len(data.records.vocab), n_heads=2, **TINY)
    net, _ = train(
        data, None, config, TrainConfig(max_steps=40, warmup_steps=5), log=lambda *a: None
    )
    assert np.isfinite(predict(net, data.records)).all()


def test_cli_train_and_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.pt"
    assert main(["train", str(sample_data_path()), "--out", str(out), "--steps", "30"]) == 0
    assert "best validation top-1" in capsys.readouterr().out
    _, vocab, _, extra = model.load(out)
    assert vocab.frozen and extra["holdout"] == []
    capsys.readouterr()
    assert main(["eval", str(out), str(sample_data_path()), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)  # no manifest: pooled over tasks
    assert result["per_network"] == {} and 0 < result["top1"] <= 1 and 0 < result["top5"] <= 1
    reading = tmp_path / "p.pt"
    args = ["train", str(sample_data_path()), "--out", str(reading), "--steps", "10"]
    assert main([*args, "--platform-input"]) == 0
    assert model.load(reading)[0].config.platform_features == 8
    assert main(["eval", str(reading), str(sample_data_path())]) == 0


def _on_two_platforms(data: Dataset) -> Dataset:
    """The sample's records twice: as measured, and on a second platform (a GPU target) where
    every task's order is reversed (cost -> 1 / cost)."""
    from dataclasses import replace

    from tcl.records import TaskTable

    rs = data.records
    n, tasks = len(rs), len(rs.tasks)
    both = rs.select(np.r_[np.arange(n), np.arange(n)])
    cost = rs.columns["mean_cost"]
    both.columns["mean_cost"] = np.r_[cost, 1e-6 / cost]
    both.columns["target"] = np.r_[rs.columns["target"], np.full(n, len(rs.targets))].astype(
        rs.columns["target"].dtype
    )
    both.columns["task"] = np.r_[rs.columns["task"], rs.columns["task"] + tasks].astype(
        rs.columns["task"].dtype
    )
    lists = rs.tasks.to_lists()
    doubled = TaskTable.from_lists({k: v + v for k, v in lists.items()})
    gpu = '{"kind":"cuda","arch":"sm_80"}'
    return Dataset(
        replace(both, tasks=doubled, targets=[*rs.targets, gpu]), data.networks * 2, data.names * 2
    )


def test_a_platform_input_learns_each_platform_its_own_order(data: Dataset) -> None:
    """Records of several platforms, each under its own descriptor: one model ranks opposite
    orders right on both; without the input the two platforms cancel out."""
    from tcl.tuning.platforms import DESCRIPTOR_FEATURES

    both = _on_two_platforms(data)
    platform = both.records.columns["target"]
    config = TrainConfig(max_steps=300, warmup_steps=10, lr=3e-3, eval_every=1000)
    accuracy = {}
    for features in (len(DESCRIPTOR_FEATURES), 0):
        cfg = ModelConfig(vocab_size=len(both.records.vocab), platform_features=features, **TINY)
        net, _ = train(both, None, cfg, config, log=lambda _: None)
        scores = predict(net, both.records)
        accuracy[features] = [
            pairwise_accuracy(both.subset(platform == p), scores[platform == p]) for p in (0, 1)
        ]
    reading, blind = accuracy[len(DESCRIPTOR_FEATURES)], accuracy[0]
    assert min(reading) > 0.65, reading
    assert np.mean(reading) > np.mean(blind) + 0.15, (reading, blind)


def test_a_descriptor_feature_never_trained_on_adds_nothing(data: Dataset) -> None:
    """Platform weights start at zero: after training on CPU records only, a GPU descriptor's
    feature still weighs nothing, while the features that were seen have learnt weights."""
    from tcl.tuning.platforms import DESCRIPTOR_FEATURES, per_record_descriptors

    cfg = ModelConfig(vocab_size=len(data.records.vocab), platform_features=8, **TINY)
    config = TrainConfig(max_steps=30, warmup_steps=5, eval_every=1000)
    net, _ = train(data, None, cfg, config, log=lambda _: None)
    weight = net.encoder.platform.weight.detach()
    seen = per_record_descriptors(data.records)[0] > 0
    assert not seen[DESCRIPTOR_FEATURES.index("gpu")]
    assert (weight[:, ~seen] == 0).all() and (weight[:, seen] != 0).any()


def test_random_programs_are_also_ranked_apart_from_search_drawn_ones(tmp_path: Path) -> None:
    # One platform's collection: half the sample's programs random, half search-drawn.
    sample, search = sample_data_path(), tmp_path / "search"
    search.mkdir()
    lines = (sample / "database_tuning_record.json").read_text().splitlines(keepends=True)
    for store, part in ((tmp_path, lines[::2]), (search, lines[1::2])):
        shutil.copy(sample / "database_workload.json", store)
        (store / "database_tuning_record.json").write_text("".join(part))
    d = load_dataset([tmp_path, search])
    rs = d.records
    drawn = search_drawn(rs)
    assert len(rs) == len(lines) and 0 < drawn.sum() < len(rs)
    assert not search_drawn(load_dataset(sample).records).any()
    together = task_groups(rs)
    apart = task_groups(rs, random_apart=True)
    assert [list(g) for g in apart[: len(together)]] == [list(g) for g in together]
    # the extra groups: each task's random programs, and nothing else
    task = rs.columns["task"]
    expected = [np.flatnonzero((task == t) & ~drawn) for t in np.unique(task)]
    assert sorted(map(list, apart[len(together) :])) == sorted(map(list, expected))
    d.networks = [{"net": 1} for _ in d.networks]
    config = ModelConfig(arch="mamba", vocab_size=len(rs.vocab), **TINY)
    net, history = train(
        d, d, config, TrainConfig(max_steps=20, warmup_steps=2, eval_every=10,
                                  rank_random_apart=True), log=lambda *a: None,
    )  # fmt: skip
    assert np.isfinite(predict(net, rs)).all() and history["config"]["rank_random_apart"]
