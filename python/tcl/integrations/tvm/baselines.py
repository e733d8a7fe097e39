"""MetaSchedule's own cost models (XGB, and the TenSet-MLP port) as baselines on tcl's records.

Each stored record is replayed through TVM: its trace is applied to its workload and
MetaSchedule's ``PerStoreFeature`` extractor featurizes the resulting program, exactly as during
tuning. The models are trained with their own ``update`` calls (one per task, like a tuner
would) and asked to ``predict`` the test records, task by task.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.runner import RunnerResult

from tcl.integrations.tvm.patches import enters_tvm
from tcl.records import RecordSet
from tcl.records.sources import read_bytes
from tcl.tuning.options import (
    BLENDED_COST_MODELS,
    COST_MODELS,
    HANDED_OVER,
    HANDOFF_AT,
    check_first_round_model,
)


class Replayer:
    """Turns RecordSet rows of MetaSchedule databases back into TVM measure candidates."""

    def __init__(self) -> None:
        self._lines: dict[str, list[bytes]] = {}
        self._workloads: dict[str, list[Any]] = {}

    def _file_lines(self, path: str) -> list[bytes]:
        if path not in self._lines:
            self._lines[path] = bytes(read_bytes(Path(path))).split(b"\n")
        return self._lines[path]

    def _workload(self, records_path: str, index: int) -> Any:
        name = Path(records_path).name.replace("tuning_record", "workload")
        path = str(Path(records_path).with_name(name))
        if path not in self._workloads:
            lines = [ln for ln in self._file_lines(path) if ln.strip()]
            self._workloads[path] = [None] * len(lines)
        table = self._workloads[path]
        if table[index] is None:
            lines = [ln for ln in self._file_lines(path) if ln.strip()]
            table[index] = ms.database.Workload.from_json(json.loads(lines[index]))
        return table[index]

    def line(self, rs: RecordSet, row: int) -> Any:
        """The parsed JSON line a row was read from."""
        path = rs.files[int(rs.columns["file"][row])]
        return json.loads(self._file_lines(path)[int(rs.columns["line"][row]) - 1])

    def record(self, rs: RecordSet, row: int) -> Any:
        """The TuningRecord of one row (its workload, trace, run times and target)."""
        path = rs.files[int(rs.columns["file"][row])]
        line = self.line(rs, row)
        return ms.database.TuningRecord.from_json(line[1], self._workload(path, line[0]))


def _by_task(rs: RecordSet) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = defaultdict(list)
    for row, task in enumerate(rs.columns["task"]):
        groups[int(task)].append(row)
    return groups


def _contexts(
    replayer: Replayer, rs: RecordSet, rows: list[int]
) -> tuple[Any, list[Any], list[Any]]:
    records = [replayer.record(rs, r) for r in rows]
    context = ms.TuneContext(mod=records[0].workload.mod, target=records[0].target)
    return context, records, [r.as_measure_candidate() for r in records]


@enters_tvm
def make_cost_model(
    kind: str,
    model_path: str | None = None,
    *,
    offline: bool = False,
    device: str = "cpu",
    first_model_path: str | None = None,
    first_until: int = 0,
    handoff_at: int = 0,
    prior_path: str | None = None,
    uncounted: dict[str, int] | None = None,
    conv_layout: str | None = None,
) -> Any:
    """A cost model for MetaSchedule (``tune.COST_MODELS``): tcl's (``model_path``, default
    the packaged base model for ``device``'s programs in ``conv_layout``,
    :func:`tcl.model.base_model_path`;
    ``tcl-learn``: learning from the run's measurements per task, :mod:`tcl.training.task_gp`),
    tcl's blended with an XGB that learns from the run or handing
    each task over to it after its first round (:mod:`blend`), MetaSchedule's XGB, its MLP
    with the fixes it needs (``model_path``: a pre-trained state saved by
    :func:`tcl.integrations.tvm.mlp_state.save_mlp`), the XGB fitted beforehand on tcl's records
    that keeps learning from the run (``xgb-prior``, :mod:`prior_xgb`; ``model_path``: its
    booster, default the packaged one for ``device``), or ``"random"``.
    ``offline``: fitted on stored records rather than during a search, so XGB learns from its
    first update (no warm-up samples) and quietly. ``first_model_path``: the tcl checkpoint that
    ranks each task until ``first_until`` of its programs are measured (its first round), for
    the blended ones (:class:`~tcl.integrations.tvm.blend.Blend`'s ``first``).
    ``handoff_at``: programs of a task ``tcl-then-xgb`` and ``tcl-then-xgb-prior`` measure
    before the learner ranks it (0: :data:`~tcl.tuning.options.HANDOFF_AT`), less the
    ``uncounted`` ones of the task (no model's picks, :class:`~tcl.integrations.tvm.blend.Blend`).
    ``tcl-then-xgb-prior`` hands each task over to ``xgb-prior`` instead of an XGB from
    nothing; ``prior_path``: the booster that ``xgb-prior`` starts from there (default: the
    packaged one for ``device``)."""
    check_first_round_model(kind, first_model_path)
    if kind.startswith("tcl"):
        from tcl.model import base_model_path

        model_path = model_path or str(base_model_path(device, conv_layout))
    if kind in ("tcl", "tcl-learn"):
        from tcl.integrations.tvm.adapter import CostModel

        return CostModel.from_checkpoint(model_path, learn=kind == "tcl-learn")
    if kind in BLENDED_COST_MODELS:
        from tcl.integrations.tvm.adapter import CostModel
        from tcl.integrations.tvm.blend import Blend

        if kind == "tcl-then-xgb-prior":
            from tcl.integrations.tvm.prior_xgb import PriorXGB, load_booster

            learner = PriorXGB(load_booster(prior_path) if prior_path else None, device=device)
        else:
            learner = ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=2)
        handoff = (handoff_at or HANDOFF_AT) if kind in HANDED_OVER else None
        first = CostModel.from_checkpoint(first_model_path) if first_model_path else None
        return Blend(
            CostModel.from_checkpoint(model_path),
            learner,
            handoff_at=handoff,
            first=first,
            first_until=first_until,
            uncounted=uncounted,
        )
    if kind == "mlp":
        from tcl.integrations.tvm.patches import fixed_mlp_model

        model = fixed_mlp_model()
        if model_path:
            from tcl.integrations.tvm.mlp_state import load_mlp

            load_mlp(model, model_path)
        return model
    if kind == "xgb-prior":
        from tcl.integrations.tvm.prior_xgb import PriorXGB, load_booster

        return PriorXGB(load_booster(model_path) if model_path else None, device=device)
    if kind == "xgb":
        return offline_xgb() if offline else ms.cost_model.XGBModel(num_tuning_cores=2)
    if kind == "random":
        return "random"
    raise ValueError(f"unknown cost model {kind!r} ({', '.join(COST_MODELS)})")


def offline_xgb(config: Any = None) -> Any:
    """MetaSchedule's XGB for fitting on stored records: it learns from its first update (no
    warm-up samples), quietly; ``config``: its ``XGBConfig`` (MetaSchedule's by default)."""
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

    return ms.cost_model.XGBModel(
        config=config or XGBConfig(), num_warmup_samples=0, num_tuning_cores=2, verbose_eval=0
    )


@enters_tvm
def fit(kind: str, train: RecordSet, replayer: Replayer | None = None, model: Any = None) -> Any:
    """MetaSchedule's ``kind`` model trained on ``train`` with one ``update`` per task; ``model``:
    this MetaSchedule cost model (e.g. :func:`offline_xgb` of other settings) instead of a new
    one."""
    model = model if model is not None else make_cost_model(kind, offline=True)
    replayer = replayer or Replayer()
    for rows in _by_task(train).values():
        context, records, candidates = _contexts(replayer, train, rows)
        results = [RunnerResult([float(x) for x in r.run_secs], None) for r in records]
        model.update(context, candidates, results)
    return model


@enters_tvm
def scores(kind: str, train: RecordSet, test: RecordSet) -> np.ndarray:
    """Trains MetaSchedule's ``kind`` model on ``train`` and scores every row of ``test``."""
    replayer = Replayer()
    model = fit(kind, train, replayer)
    out = np.zeros(len(test))
    for rows in _by_task(test).values():
        context, _, candidates = _contexts(replayer, test, rows)
        out[rows] = np.asarray(model.predict(context, candidates), dtype=np.float64)
    return out
