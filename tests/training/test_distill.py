"""Continual distillation: the two phases, the EWC penalty, the chain state, determinism."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from tcl import model as models
from tcl.model.inputs import predict
from tcl.records import sample_data_path
from tcl.records.dataset import Dataset, load_dataset
from tcl.training import distill

FAST = distill.DistillConfig(
    progress_steps=15, compress_steps=15, fisher_batches=2, programs_per_task=24
)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load_dataset(sample_data_path())


def _kb(data: Dataset) -> models.SequenceCostModel:  # type: ignore[name-defined]
    torch.manual_seed(0)
    config = models.ModelConfig(
        vocab_size=len(data.records.vocab), d_model=16, n_layers=1, dropout=0.0
    )
    return models.build(config)  # type: ignore[return-value]


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_ewc_penalty_is_zero_at_anchor_and_grows(data: Dataset) -> None:
    kb = _kb(data)
    anchor = _params(kb)
    fisher = {n: torch.ones_like(p) for n, p in anchor.items()}
    assert distill.ewc_penalty(kb, fisher, anchor).item() == 0
    values = []
    for scale in (0.01, 0.1, 1.0):
        with torch.no_grad():
            for n, p in kb.named_parameters():
                p.copy_(anchor[n] + scale)
        values.append(distill.ewc_penalty(kb, fisher, anchor).item())
    assert 0 < values[0] < values[1] < values[2]


def test_progress_trains_the_column_not_the_knowledge_base(data: Dataset) -> None:
    chain = distill.Chain(_kb(data))
    before = _params(chain.kb)
    column = distill.progress(chain, data, FAST)
    for n, p in chain.kb.named_parameters():
        torch.testing.assert_close(p, before[n], rtol=0, atol=0)
    assert any(p.abs().sum() > 0 for p in column.lateral_out.parameters())  # laterals learned
    kinds = torch.randint(1, 10, (4, 8))
    assert torch.isfinite(column(kinds, torch.randn(4, 8, 10))).all()


def test_compress_moves_the_base_and_ewc_holds_it(data: Dataset) -> None:
    chain = distill.step(distill.Chain(_kb(data)), data, "p1", FAST)
    assert chain.platforms == ["p1"] and chain.fisher and chain.anchor
    size = models.num_parameters(chain.kb)
    column = distill.progress(chain, data, FAST)

    def compress(ewc_lambda: float) -> distill.Chain:
        config = distill.DistillConfig(**{**FAST.__dict__, "ewc_lambda": ewc_lambda})
        return distill.compress(chain, column, data, "p2", config)

    def drift(kb: torch.nn.Module) -> float:
        """Fisher-weighted distance from the anchor: what the penalty measures."""
        return sum(
            (chain.fisher[n] * (p - chain.anchor[n]).pow(2)).sum().item()
            for n, p in kb.named_parameters()
        )

    free, held = compress(0.0), compress(100.0)
    assert 0 < drift(held.kb) < 0.5 * drift(free.kb)
    assert models.num_parameters(held.kb) == size  # the model does not grow


def test_column_starts_as_the_knowledge_base_or_fresh(data: Dataset) -> None:
    kb = _kb(data).eval()
    kinds, fields = torch.randint(1, 10, (4, 8)), torch.randn(4, 8, 10)
    copied = distill.ProgressiveColumn(kb, init_from_kb=True).eval()
    fresh = distill.ProgressiveColumn(kb, init_from_kb=False).eval()
    torch.testing.assert_close(copied(kinds, fields), kb(kinds, fields))  # adapters start at 0
    assert not torch.allclose(fresh(kinds, fields), kb(kinds, fields))
    assert all(p.requires_grad for p in copied.ac.parameters())
    assert not any(p.requires_grad for p in copied.kb.parameters())
    with pytest.raises(ValueError, match="column_init"):
        distill.DistillConfig(column_init="warm")


def _agreement(a: torch.nn.Module, b: torch.nn.Module, data: Dataset) -> float:
    """Mean per-task rank correlation (Spearman, no ties in float scores) of two models."""
    from tcl.model.inputs import predict
    from tcl.training.train import task_groups

    sa, sb = predict(a, data.records), predict(b, data.records)
    ranks = [
        (sa[g].argsort().argsort(), sb[g].argsort().argsort()) for g in task_groups(data.records)
    ]
    return float(np.mean([np.corrcoef(x, y)[0, 1] for x, y in ranks]))


def test_compress_distils_the_column_on_the_unmeasured_pool(data: Dataset) -> None:
    """The pool's measurements are never read: compress on a copy whose records all failed
    (no labels) still makes the knowledge base rank the pool as the column does."""
    chain = distill.Chain(_kb(data))
    config = distill.DistillConfig(**{**FAST.__dict__, "column_init": "fresh"})
    column = distill.progress(chain, data, config)
    unlabeled = copy.deepcopy(data)
    unlabeled.records.columns["error"] = np.full_like(unlabeled.records.columns["error"], 1)
    assert not unlabeled.records.throughput().any()
    longer = distill.DistillConfig(**{**config.__dict__, "compress_steps": 60})
    moved = distill.compress(chain, column, data, "p2", longer, pool=unlabeled)
    before, after = _agreement(chain.kb, column, data), _agreement(moved.kb, column, data)
    assert after > 0.9 and 1 - after < 0.5 * (1 - before), (before, after)


def test_chain_round_trip_and_determinism(data: Dataset, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    a = distill.step(distill.Chain(_kb(data)), data, "p1", FAST)
    b = distill.step(distill.Chain(_kb(data)), data, "p1", FAST)
    for (n, p), q in zip(a.kb.named_parameters(), b.kb.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=n)
    a.save(tmp_path / "chain.pt")
    back = distill.Chain.load(tmp_path / "chain.pt")
    assert back.platforms == ["p1"]
    kinds, fields = torch.randint(1, 10, (3, 6)), torch.randn(3, 6, 10)
    torch.testing.assert_close(back.kb(kinds, fields), a.kb.eval()(kinds, fields))
    for n in a.fisher:
        torch.testing.assert_close(back.fisher[n], a.fisher[n])
        torch.testing.assert_close(back.anchor[n], a.anchor[n])


def test_averaged_chain_is_its_members_mean(data: Dataset) -> None:
    """A soup of one move in two seeds: every weight, Fisher and anchor term is the members'
    mean, and only chains moved through the same platforms average."""
    members = [
        distill.step(distill.Chain(_kb(data)), data, "p1", replace(FAST, seed=seed))
        for seed in (0, 1)
    ]
    soup = distill.Chain.averaged(members)
    assert soup.platforms == ["p1"]
    one, two = (dict(m.kb.named_parameters()) for m in members)
    assert any(not torch.equal(one[n], two[n]) for n in one)  # the seeds moved apart
    for n, p in soup.kb.named_parameters():
        torch.testing.assert_close(p, (one[n] + two[n]) / 2, msg=n)
    assert members[0].fisher.keys() == members[0].anchor.keys() == soup.fisher.keys() != set()
    for n in members[0].fisher:
        torch.testing.assert_close(
            soup.fisher[n], (members[0].fisher[n] + members[1].fisher[n]) / 2
        )
        torch.testing.assert_close(
            soup.anchor[n], (members[0].anchor[n] + members[1].anchor[n]) / 2
        )
    elsewhere = distill.step(distill.Chain(_kb(data)), data, "p2", FAST)
    with pytest.raises(ValueError, match="same platforms"):
        distill.Chain.averaged([members[0], elsewhere])


def descriptor_of(directory: str) -> list[float]:
    from tcl.tuning.platforms import records_descriptor

    return records_descriptor(load_dataset(directory).records)


def test_cli_distill_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tcl.cli import main

    base = tmp_path / "base.pt"
    assert main(["train", str(sample_data_path()), "--out", str(base), "--steps", "10"]) == 0
    out = tmp_path / "moved.pt"
    target = str(sample_data_path())
    args = [
        "distill",
        "--base",
        str(base),
        "--target",
        target,
        target,
        "--fraction",
        "0.5",
        "--steps",
        "5",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    assert "after 2 platform(s)" in capsys.readouterr().out
    net, _, _, extra = models.load(out)
    assert extra["platforms"] == [target, target]
    base_net = models.load(base)[0]
    d_model = base_net.config.d_model  # type: ignore[union-attr]
    # One platform input of fixed width is added once (the records' target descriptor).
    grown = models.num_parameters(base_net) + 8 * d_model + d_model
    assert models.num_parameters(net) == grown
    assert extra["descriptors"] == {target: descriptor_of(target)}
    # Resume the chain from its state file.
    again = [
        "distill",
        "--base",
        str(out) + ".chain",
        "--target",
        target,
        "--steps",
        "5",
        "-o",
        str(tmp_path / "third.pt"),
    ]
    assert main(again) == 0
    assert distill.Chain.load(str(tmp_path / "third.pt") + ".chain").platforms == [target] * 3
    assert models.num_parameters(models.load(tmp_path / "third.pt")[0]) == grown


def test_chain_with_platform_descriptors(data: Dataset, tmp_path: Path) -> None:
    """With descriptors the knowledge base reads the platform: it gains one fixed input once,
    scores each platform by its own descriptor, and keeps them through save/load."""
    one, two, three = (
        [1.0, 0, 1, 0, 0, 0, 1, 0],
        [1.0, 0, 0, 1, 0, 0, 0, 1],
        [1.0, 0, 1, 0, 0, 1, 0, 0],
    )
    source = _kb(data)
    chain = distill.Chain.start(source, "p1", data, FAST, descriptor=one)
    kinds, fields = torch.randint(1, 10, (4, 8)), torch.randn(4, 8, 10)
    torch.testing.assert_close(
        chain.scorer("p1").eval()(kinds, fields), source.eval()(kinds, fields)
    )
    size = models.num_parameters(chain.kb)
    assert size == models.num_parameters(source) + 8 * 16 + 16
    chain = distill.step(chain, data, "p2", FAST, descriptor=two)
    chain = distill.step(chain, data, "p3", FAST, descriptor=three)
    assert models.num_parameters(chain.kb) == size  # constant after the first platform
    assert chain.descriptors == {"p1": one, "p2": two, "p3": three}
    scores = {p: chain.scorer(p).eval()(kinds, fields) for p in ("p1", "p2", "p3")}
    assert not torch.allclose(scores["p1"], scores["p2"])  # the platform input was learnt
    chain.save(tmp_path / "chain.pt")
    back = distill.Chain.load(tmp_path / "chain.pt")
    assert back.descriptors == chain.descriptors
    torch.testing.assert_close(back.scorer("p2").eval()(kinds, fields), scores["p2"])


def test_compress_keeps_earlier_platforms_scores_under_their_descriptors(data: Dataset) -> None:
    one, two = [1.0, 0, 1, 0, 0, 0, 1, 0], [1.0, 0, 0, 1, 0, 0, 0, 1]
    chain = distill.Chain.start(_kb(data), "p1", data, FAST, descriptor=one)
    before = predict(chain.scorer("p1"), data.records)

    def drift(keep_weight: float) -> float:
        config = distill.DistillConfig(
            **{**FAST.__dict__, "ewc_lambda": 0.0, "keep_weight": keep_weight}
        )
        moved = distill.step(chain, data, "p2", config, descriptor=two)
        return float(np.abs(predict(moved.scorer("p1"), data.records) - before).mean())

    free, kept = drift(0.0), drift(3.0)
    assert 0 < kept < 0.5 * free, (kept, free)


def test_cli_distill_members_average_the_seeds(tmp_path: Path) -> None:
    """--members 2 --seed 3 writes the mean of the moves with --seed 3 and --seed 4."""
    from tcl.cli import main

    torch.set_num_threads(1)
    base = tmp_path / "base.pt"
    assert main(["train", str(sample_data_path()), "--out", str(base), "--steps", "10"]) == 0
    common = ["distill", "--base", str(base), "--target", str(sample_data_path())]
    common += ["--fraction", "0.5", "--steps", "5", "-q"]
    for name, extra in (("a", ["--seed", "3"]), ("b", ["--seed", "4"])):
        assert main([*common, *extra, "-o", str(tmp_path / f"{name}.pt")]) == 0
    assert main([*common, "--seed", "3", "--members", "2", "-o", str(tmp_path / "s.pt")]) == 0
    (a, *_), (b, *_), (soup, _, _, extra) = (
        models.load(tmp_path / f"{n}.pt") for n in ("a", "b", "s")
    )
    assert extra["members"] == 2
    one, two = dict(a.named_parameters()), dict(b.named_parameters())
    for n, p in soup.named_parameters():
        torch.testing.assert_close(p, (one[n] + two[n]) / 2, msg=n)
    chained = dict(distill.Chain.load(str(tmp_path / "s.pt") + ".chain").kb.named_parameters())
    for n, p in soup.named_parameters():
        torch.testing.assert_close(chained[n], p, msg=n)
