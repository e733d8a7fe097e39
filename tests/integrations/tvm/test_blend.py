"""tcl.integrations.tvm.blend: the frozen model's ranks, blended per task with a learner's as
the run measures that task, or handed over to it; a real tune with tcl's model and
MetaSchedule's XGB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tcl

from conftest import matmul_module

pytestmark = pytest.mark.tvm


class _Fixed:
    """A cost model whose scores are given; counts its updates."""

    def __init__(self, scores: list[float], fitted: bool = True) -> None:
        self.scores, self.updates = np.array(scores), 0
        self.booster = object() if fitted else None

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        return self.scores[: len(candidates)]

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.updates += 1


def _task(n: int) -> tuple[Any, list[Any]]:
    """A tune context of an n x n matmul and four of its programs (the blend is called through
    TVM's FFI, which takes only real contexts and candidates)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    mod = matmul_module(n)
    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    context = ms.TuneContext(mod=mod, target=target, task_name="main")
    return context, tm.random_candidates(mod, target, 4, seed=0)


def _results(ok: int, failed: int) -> list[Any]:
    from tvm.s_tir import meta_schedule as ms

    good = [ms.runner.RunnerResult([1e-3], None) for _ in range(ok)]
    return good + [ms.runner.RunnerResult(None, "failed") for _ in range(failed)]


def test_the_learner_weighs_in_per_task_as_the_run_measures_it() -> None:
    from tcl.integrations.tvm.blend import Blend, learner_weight
    from tcl.training.metrics import ranks

    prior, learner = _Fixed([0.9, 0.1, 0.5, 0.3]), _Fixed([0.0, 1.0, 0.2, 0.4])
    blend = Blend(prior, learner, half_at=4)
    (task, candidates), (other, others) = _task(8), _task(16)
    np.testing.assert_array_equal(blend.predict(task, candidates), prior.scores)
    blend.update(task, candidates, _results(3, 1))
    assert prior.updates == learner.updates == 1
    weight = learner_weight(3, 4)
    assert weight == pytest.approx(3 / 7)
    expected = (1 - weight) * ranks(prior.scores) + weight * ranks(learner.scores)
    np.testing.assert_allclose(blend.predict(task, candidates), expected)
    # another task: nothing measured of it, the prior alone
    np.testing.assert_array_equal(blend.predict(other, others), prior.scores)
    # a learner not fitted yet answers at random: not used
    unfitted = Blend(prior, _Fixed([0.0, 1.0, 0.2, 0.4], fitted=False), half_at=4)
    unfitted.update(task, candidates, _results(4, 0))
    np.testing.assert_array_equal(unfitted.predict(task, candidates), prior.scores)


def test_a_handoff_gives_each_task_to_the_learner_after_its_first_programs() -> None:
    from tcl.integrations.tvm.blend import Blend

    prior, learner = _Fixed([0.9, 0.1, 0.5, 0.3]), _Fixed([0.0, 1.0, 0.2, 0.4])
    handoff = Blend(prior, learner, handoff_at=4)
    (task, candidates), (other, others) = _task(8), _task(16)
    np.testing.assert_array_equal(handoff.predict(task, candidates), prior.scores)
    handoff.update(task, candidates, _results(3, 1))  # 3 ran: not yet
    np.testing.assert_array_equal(handoff.predict(task, candidates), prior.scores)
    handoff.update(task, candidates, _results(1, 3))
    assert prior.updates == learner.updates == 2
    # the learner's own scores, not ranks: the search samples parents in proportion to them
    np.testing.assert_array_equal(handoff.predict(task, candidates), learner.scores)
    np.testing.assert_array_equal(handoff.predict(other, others), prior.scores)
    unfitted = Blend(prior, _Fixed([0.0, 1.0, 0.2, 0.4], fitted=False), handoff_at=4)
    unfitted.update(task, candidates, _results(4, 0))
    np.testing.assert_array_equal(unfitted.predict(task, candidates), prior.scores)


def test_a_handoff_does_not_count_the_programs_no_model_ranked() -> None:
    """A task's round of other tasks' best programs (``Transplants.apart``, filled in during
    the run) is no model's ranking: the hand-off waits for as many of the task's own."""
    from tcl.integrations.tvm.blend import Blend
    from tcl.integrations.tvm.measure import task_of

    prior, learner = _Fixed([0.9, 0.1, 0.5, 0.3]), _Fixed([0.0, 1.0, 0.2, 0.4])
    apart: dict[str, int] = {}
    handoff = Blend(prior, learner, handoff_at=4, uncounted=apart)
    (task, candidates), (other, others) = _task(8), _task(16)
    handoff.update(task, candidates, _results(2, 0))  # the quick round's own
    handoff.update(task, candidates, _results(3, 0))  # the round of transplants
    apart[task_of(task)] = 3
    np.testing.assert_array_equal(handoff.predict(task, candidates), prior.scores)  # 2 of 4
    handoff.update(task, candidates, _results(2, 0))
    np.testing.assert_array_equal(handoff.predict(task, candidates), learner.scores)
    # another task's count is its own
    handoff.update(other, others, _results(4, 0))
    np.testing.assert_array_equal(handoff.predict(other, others), learner.scores)


def test_tune_with_tcl_blended_with_xgb(checkpoint: Path, tmp_path: Path) -> None:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure
    from tcl.integrations.tvm.adapter import CostModel
    from tcl.integrations.tvm.blend import Blend

    prior = CostModel.from_checkpoint(str(checkpoint))
    learner = ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=1)
    blend = Blend(prior, learner, half_at=8)
    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    measure.tune_tir(matmul_module(64), target, str(tmp_path), 24, cost_model=blend)
    rs = tcl.read_records(tmp_path)
    assert len(rs) == 24 and (rs.columns["error"] == 0).all()
    # every measured program reached both models; the learner was fitted on them
    assert list(blend.measured.values()) == [24]
    assert prior.calls["update"] == 3 and learner.data_size == 24 and learner.booster is not None


def test_a_first_model_ranks_each_task_until_its_first_round_is_measured() -> None:
    """``first`` ranks a task while fewer than ``first_until`` of its programs ran, the prior
    until the hand-off, the learner after; every measurement reaches all three."""
    from tcl.integrations.tvm.blend import Blend

    first, prior = _Fixed([0.2, 0.4, 0.9, 0.1]), _Fixed([0.9, 0.1, 0.5, 0.3])
    learner = _Fixed([0.0, 1.0, 0.2, 0.4])
    staged = Blend(prior, learner, handoff_at=4, first=first, first_until=2)
    (task, candidates), (other, others) = _task(8), _task(16)
    np.testing.assert_array_equal(staged.predict(task, candidates), first.scores)
    staged.update(task, candidates, _results(1, 1))  # one ran: still the first round
    np.testing.assert_array_equal(staged.predict(task, candidates), first.scores)
    staged.update(task, candidates, _results(1, 0))
    np.testing.assert_array_equal(staged.predict(task, candidates), prior.scores)
    np.testing.assert_array_equal(staged.predict(other, others), first.scores)
    staged.update(task, candidates, _results(2, 0))
    np.testing.assert_array_equal(staged.predict(task, candidates), learner.scores)
    assert first.updates == prior.updates == learner.updates == 3
    blended = Blend(prior, learner, half_at=4, first=first, first_until=2)
    np.testing.assert_array_equal(blended.predict(task, candidates), first.scores)


def test_the_cost_models_tcl_tune_names_blend_or_hand_off(checkpoint: Path, tmp_path: Path) -> None:
    from tcl.integrations.tvm.baselines import make_cost_model
    from tcl.integrations.tvm.blend import HANDOFF_AT, Blend
    from tcl.tuning.tune import COST_MODELS

    blend = make_cost_model("tcl+xgb", str(checkpoint))
    handoff = make_cost_model("tcl-then-xgb", str(checkpoint))
    assert isinstance(blend, Blend) and blend.handoff_at is None
    assert isinstance(handoff, Blend) and handoff.handoff_at == HANDOFF_AT
    assert {"tcl+xgb", "tcl-then-xgb", "tcl-then-xgb-prior"} <= set(COST_MODELS)
    assert handoff.first is None and handoff.first_until == 0
    # the hand-off to the pre-fitted XGB: ready at once, its packaged trees learning
    to_prior = make_cost_model("tcl-then-xgb-prior", str(checkpoint))
    assert isinstance(to_prior, Blend) and to_prior.handoff_at == HANDOFF_AT
    assert to_prior._ready() and to_prior.learner.learn
    assert to_prior.learner.booster.num_boosted_rounds() > 0
    staged = make_cost_model(
        "tcl-then-xgb", str(checkpoint), first_model_path=str(checkpoint), first_until=2
    )
    assert staged.first is not None and staged.first_until == 2
    assert staged.first is not staged.prior
    # a hand-off point of the run's (tcl tune --hand-off): the learner's from that many programs
    early = make_cost_model("tcl-then-xgb-prior", str(checkpoint), handoff_at=2)
    assert isinstance(early, Blend) and early.handoff_at == 2
    # another pre-fitted booster for the learner to start from (bench_learning.py --prior)
    import xgboost as xgb

    from tcl.integrations.tvm.prior_xgb import save_booster

    rows = np.random.default_rng(0).random((16, 4))
    own = xgb.train({"max_depth": 2}, xgb.DMatrix(rows, label=rows[:, 0]), num_boost_round=3)
    save_booster(own, tmp_path / "own.ubj.gz")
    on_own = make_cost_model(
        "tcl-then-xgb-prior", str(checkpoint), prior_path=str(tmp_path / "own.ubj.gz")
    )
    assert on_own.learner.prior.num_boosted_rounds() == 3
    assert on_own.learner.booster is on_own.learner.prior and on_own.learner.learn
    with pytest.raises(
        ValueError, match=r"a first-round model is for tcl\+xgb, tcl-then-xgb, tcl-then-xgb-prior"
    ):
        make_cost_model("tcl", str(checkpoint), first_model_path=str(checkpoint))
    with pytest.raises(ValueError, match="unknown cost model 'xgb-then-tcl'"):
        make_cost_model("xgb-then-tcl")


def test_tcl_cost_models_default_to_the_packaged_model_of_the_device() -> None:
    import torch

    from tcl import model as models
    from tcl.integrations.tvm.baselines import make_cost_model

    for device in ("cpu", "cuda"):
        expected = models.load(models.base_model_path(device))[0].state_dict()
        for kind in ("tcl", "tcl-then-xgb"):
            made = make_cost_model(kind, device=device)
            net = made.net if kind == "tcl" else made.prior.net
            assert all(torch.equal(v, net.state_dict()[k]) for k, v in expected.items()), kind
    blocked = models.load(models.base_model_path("cpu", "NCHW16c"))[0].state_dict()
    made = make_cost_model("tcl-then-xgb-prior", conv_layout="NCHW16c")
    assert all(torch.equal(v, made.prior.net.state_dict()[k]) for k, v in blocked.items())
