"""tcl's cost model inside stock MetaSchedule: a real (tiny) tune guided by it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl import model as models

pytestmark = pytest.mark.tvm


def test_candidates_tokenize_like_stored_records(checkpoint: Path) -> None:
    import tvm
    from tvm import te

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.adapter import candidate_records

    a = te.placeholder((32, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((32, 32), lambda i, j: te.sum(a[i, k] * a[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, c])})
    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    cands = tm.random_candidates(mod, target, 6, 0)
    _, vocab, tokenizer, _ = models.load(checkpoint)
    rs = candidate_records(cands, target, vocab, tokenizer)
    assert len(rs) == len(cands) and (rs.columns["error"] == -1).all()
    assert [json.loads(t)["mcpu"] for t in rs.targets] == ["x86-64"]
    assert (rs.lengths > 0).all() and rs.vocab.frozen


def test_a_candidate_is_written_as_the_collector_writes_its_trace() -> None:
    """A search's keys of its candidates (``text_of_trace``) are the collector's
    ``trace_key(trace_json(...))``, byte for byte, so that a candidate is known by the key its
    stored record has."""
    import tvm
    from tvm import te

    from tcl.integrations.tvm import measure as tm

    a = te.placeholder((64, 48), name="A")
    k = te.reduce_axis((0, 48), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * a[j, k], axis=k), name="C")
    d = te.compute((64, 64), lambda i, j: te.max(c[i, j], 0.0), name="D")
    mod = tvm.IRModule({"main": te.create_prim_func([a, d])})
    target = tvm.target.Target({"kind": "llvm", "mcpu": "core-avx2", "num-cores": 1})
    cands = tm.random_candidates(mod, target, 16, 1)
    assert cands
    for cand in cands:
        assert tm.text_of_trace(cand.sch.trace) == tm.trace_key(tm.trace_json(cand.sch))


def test_tune_with_the_tcl_cost_model(checkpoint: Path, tmp_path: Path) -> None:
    import tvm
    from tvm import te

    from tcl.integrations.tvm import measure
    from tcl.integrations.tvm.adapter import CostModel

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    cost_model = CostModel.from_checkpoint(str(checkpoint), online_steps=2)
    measure.tune_tir(
        mod,
        tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 2}),
        str(tmp_path),
        16,
        cost_model=cost_model,
    )
    assert cost_model.calls["predict"] > 0 and cost_model.calls["update"] > 0
    assert cost_model.calls["candidates"] >= 16
    rs = tcl.read_records(tmp_path)
    assert len(rs) == 16 and (rs.columns["error"] == 0).all()
    assert np.isfinite(rs.columns["mean_cost"]).all()
    cost_model.save(str(tmp_path / "after.pt"))
    assert models.load(tmp_path / "after.pt")[0] is not None


def test_cost_model_load_on_the_class_and_on_an_instance(checkpoint: Path, tmp_path: Path) -> None:
    from tcl.integrations.tvm.adapter import CostModel

    base = CostModel.load()  # the packaged base model
    assert base.vocab.kinds == models.load(models.base_model_path())[1].kinds
    mine = CostModel.load(str(checkpoint))  # a checkpoint of tcl train
    assert mine.vocab.kinds != base.vocab.kinds
    base.load(str(checkpoint))  # MetaSchedule's contract: replace the model in place
    assert base.vocab.kinds == mine.vocab.kinds
    base.save(str(tmp_path / "saved.pt"))
    assert models.load(tmp_path / "saved.pt")[1].kinds == mine.vocab.kinds


def test_a_platform_reading_model_scores_for_the_tuning_target(checkpoint: Path) -> None:
    """A model moved across platforms with descriptors is bound to the tune context's target."""
    import torch
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.adapter import CostModel, candidate_records
    from tcl.model.inputs import predict
    from tcl.tuning.platforms import descriptor

    net, vocab, tokenizer, _ = models.load(checkpoint)
    reading = models.with_platform_input(net, 8)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)  # the same weights whatever ran before
        reading.encoder.platform.weight.normal_(generator=generator)  # type: ignore[union-attr]
    cost_model = CostModel(reading, vocab, tokenizer)
    a = te.placeholder((32, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((32, 32), lambda i, j: te.sum(a[i, k] * a[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, c])})
    scores = {}
    for mcpu in ("x86-64", "core-avx2"):
        target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": 1})
        cands = tm.random_candidates(mod, target, 6, 0)
        context = ms.TuneContext(mod=mod, target=target)
        scores[mcpu] = cost_model.predict(context, cands)
        rs = candidate_records(cands, target, vocab, tokenizer)
        # the cost model scores each distinct program once, so in a batch of another size:
        # float32 sums in another order, equal to about 1e-6 (eps 1.2e-7), not bit for bit
        np.testing.assert_allclose(scores[mcpu], predict(reading, rs), rtol=1e-5)
        # the records carry the target: its descriptor reaches every row
        bound = models.ForPlatform(reading, descriptor(tm.to_py(target.export())))
        np.testing.assert_allclose(scores[mcpu], predict(bound, rs), rtol=1e-5)
    assert not np.allclose(scores["x86-64"], scores["core-avx2"])


def test_a_learning_cost_model_ranks_by_what_its_task_measured(checkpoint: Path) -> None:
    """``learn=True``: the base model's scores until a task is measured; then the task's
    Gaussian process (tcl.training.task_gp) fed with the measured programs' scores,
    embeddings and costs, and no other task changes."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.adapter import CostModel, candidate_records
    from tcl.model.inputs import predict, predict_with_embeddings
    from tcl.training.task_gp import TaskGP

    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    contexts, cands = [], []
    for n in (32, 48):
        mod = _square_matmul(n)
        contexts.append(ms.TuneContext(mod=mod, target=target))
        cands.append(tm.random_candidates(mod, target, 8, 0))
    net, vocab, tokenizer, _ = models.load(checkpoint)
    cost_model = CostModel(net, vocab, tokenizer, learn=True)
    rs = candidate_records(cands[0], target, vocab, tokenizer)
    # float32 scores: each repeated program is scored once, in a batch of another make-up,
    # which moves a score by an ulp or two
    np.testing.assert_allclose(
        cost_model.predict(contexts[0], cands[0]), predict(net, rs), rtol=1e-6
    )
    before_other = cost_model.predict(contexts[1], cands[1])
    costs = np.linspace(1e-3, 5e-3, 5)
    results = [RunnerResult([float(x)], None) for x in costs] + [RunnerResult(None, "failed")]
    cost_model.update(contexts[0], cands[0][:6], results)
    reference = TaskGP()
    scores, embeddings = predict_with_embeddings(net, rs)
    reference.add("t", scores[:5], embeddings[:5], costs)
    np.testing.assert_allclose(
        cost_model.predict(contexts[0], cands[0]),
        reference.predict("t", scores, embeddings)[0],
        rtol=1e-6,
    )
    assert len(cost_model.gp.tasks) == 1  # the failed program taught nothing
    np.testing.assert_allclose(cost_model.predict(contexts[1], cands[1]), before_other, rtol=1e-6)


def _square_matmul(n: int) -> object:
    """A module computing A @ A for an n x n A."""
    import tvm
    from tvm import te

    a = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * a[k, j], axis=k), name="C")
    return tvm.IRModule({"main": te.create_prim_func([a, c])})
