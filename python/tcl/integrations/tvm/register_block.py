"""A task's program rewritten to keep a block of its output in vector registers.

MetaSchedule's multi-level tiling on a CPU splits each spatial loop of a matmul or a
convolution into four tiles and each reduction loop into two, and orders them outer spatial,
reduction, inner spatial, inner reduction, innermost spatial: the innermost spatial tiles are
the block of outputs the program updates at each step of its inner reduction. A run's search
moves from the programs it starts with (transplants, the base model's picks) one decision at a
time, and a different blocking can be several correlated decisions away: on a Zen 4 the
time-budget default's one-minute BERT-tiny runs kept the blocking of their first programs (a
panel of 64 rows by 64 columns inside a reduction step of 4-8) and ended 2-6% behind XGB's
1,024-trial best on its matmuls, whose best programs keep 8 rows by one vector of 16 columns in
registers across the reduction.

:func:`blocked_trace` rewrites a program's tile decisions to that register block, keeping the
rest (its outer tiles, unrolling, where blocks are computed): the innermost spatial tile one
vector of the CPU's 32-bit lanes (:func:`vector_lanes`), the one before it up to :data:`ROWS`,
the other spatial loops' innermost tiles 1, the spatial tiles between a reduction's two 1, and
each reduction's inner tile 1, so that a step of the reduction loads one vector, broadcasts up to
:data:`ROWS` values and accumulates as many vectors in registers. Each factor is the largest
that divides its loop. :class:`RegisterBlock` makes it a task's candidate (``tcl tune
--register-block``: the rewrite of the best program of each task's quick round leads the round
after it; bench/README.md, *A register-blocked rewrite of each task's best quick pick*).
"""

from __future__ import annotations

from typing import Any

from tcl.integrations.tvm.measure import text_of_trace, to_py
from tcl.integrations.tvm.replay import measure_candidate, postprocessed

# Rows of the register block: 8 accumulators of one vector each, and 8 broadcasts, fit the 16
# vector registers of AVX2 as the 32 of AVX-512. On a Zen 4 the rewrites with 4 rows ran up to
# 4x slower than with 8 on ResNet-50's blocked convolutions, and 16 no faster than 8.
ROWS = 8
# MetaSchedule's CPU multi-level tiling: a spatial loop in 4 tiles, a reduction loop in 2.
SPATIAL_TILES, REDUCTION_TILES = 4, 2


def vector_lanes(target: Any) -> int | None:
    """32-bit lanes of the widest vector of a CPU target (16 with AVX-512, 8 with AVX2, 4
    otherwise); None for a GPU's, whose tiles map to threads, not registers."""
    from tcl.tuning.platforms import simd_width

    if target.kind.name != "llvm":
        return None
    return simd_width(dict(target.export())) // 32


def _largest_divisor(extent: int, most: int) -> int:
    return max(d for d in range(1, min(extent, most) + 1) if extent % d == 0)


def _blocked_spatial(tile: list[int], inner: int) -> list[int]:
    """A spatial loop's 4 tile factors with the innermost the largest divisor of the loop up
    to ``inner``, the one before it 1, the second kept where it still divides."""
    extent = 1
    for factor in tile:
        extent *= factor
    innermost = _largest_divisor(extent, inner)
    second = tile[1] if extent % (tile[1] * innermost) == 0 else 1
    return [extent // (second * innermost), second, 1, innermost]


def blocked_trace(trace: list[Any], lanes: int, rows: int = ROWS) -> list[Any] | None:
    """``trace`` (MetaSchedule's JSON of a trace: instructions, decisions; postprocessing left
    out) with the tile decisions of each block that has at least two spatial loops tiled in four
    rewritten to a register block of ``rows`` by ``lanes`` (module docstring); None where no
    block is tiled so, or the trace already has that blocking."""
    insts, decisions = trace
    block_of = {}  # a loop's name -> the block GetLoops took it from
    for kind, inputs, _attrs, outputs in insts:
        if kind == "GetLoops":
            block_of.update(dict.fromkeys(outputs, inputs[0]))
    tiles: dict[str, list[int]] = {}  # block -> indices into ``decisions``, in trace order
    for i, (inst, _) in enumerate(decisions):
        kind, inputs = insts[inst][0], insts[inst][1]
        if kind == "SamplePerfectTile" and inputs[0] in block_of:
            tiles.setdefault(block_of[inputs[0]], []).append(i)
    rewritten = [[inst, value] for inst, value in decisions]
    for indices in tiles.values():
        spatial = [i for i in indices if len(decisions[i][1]) == SPATIAL_TILES]
        if len(spatial) < 2:
            continue
        for k, i in enumerate(spatial):
            inner = lanes if k == len(spatial) - 1 else rows if k == len(spatial) - 2 else 1
            rewritten[i][1] = _blocked_spatial(list(decisions[i][1]), inner)
        for i in indices:
            if len(decisions[i][1]) == REDUCTION_TILES:
                outer, inner_tile = decisions[i][1]
                rewritten[i][1] = [outer * inner_tile, 1]
    changed = any(new != old for (_, new), (_, old) in zip(rewritten, decisions, strict=True))
    return [insts, rewritten] if changed else None


def before_postprocessing(trace: list[Any]) -> list[Any]:
    """A trace's JSON (instructions, decisions: a record's) up to its postprocessing (the
    postprocessors run again on the replay: what they decide depends on the program)."""
    insts, decisions = trace
    cut = next((i for i, inst in enumerate(insts) if inst[0] == "EnterPostproc"), len(insts))
    return [insts[:cut], [d for d in decisions if d[0] < cut]]


def without_postprocessing(trace: Any) -> list[Any]:
    """:func:`before_postprocessing` of a TVM ``Trace``."""
    return before_postprocessing(to_py(trace.as_json()))


class RegisterBlock:
    """A task's register-blocked rewrites: ``mod`` its module, ``postprocs`` its space
    generator's postprocessors, ``lanes`` its target's (:func:`vector_lanes`)."""

    def __init__(self, mod: Any, postprocs: list[Any], lanes: int) -> None:
        self.mod, self.postprocs, self.lanes = mod, postprocs, lanes

    @classmethod
    def of_context(cls, context: Any) -> RegisterBlock | None:
        """The rewrites of the task of ``context`` (a MetaSchedule tune context whose design
        space is made), or None where its target is not a CPU's."""
        lanes = vector_lanes(context.target)
        if lanes is None:
            return None
        return cls(context.mod, list(context.space_generator.postprocs), lanes)

    def of(self, trace: Any) -> tuple[str, Any] | None:
        """The rewrite of a measured program's ``trace`` (a TVM ``Trace``) as (trace key,
        measure candidate), replayed on the task and postprocessed; None where it has nothing
        to rewrite, does not apply or a postprocessor rejects it."""
        from tvm.s_tir import Schedule, Trace

        blocked = blocked_trace(without_postprocessing(trace), self.lanes)
        if blocked is None:
            return None
        sch = Schedule(self.mod)
        try:
            Trace.apply_json_to_schedule(blocked, sch)
            if not postprocessed(sch, self.postprocs):
                return None
        except Exception:  # TVM raises many kinds of error for a trace that cannot apply
            return None
        return text_of_trace(sch.trace), measure_candidate(sch)


__all__ = [
    "ROWS",
    "RegisterBlock",
    "before_postprocessing",
    "blocked_trace",
    "vector_lanes",
    "without_postprocessing",
]
