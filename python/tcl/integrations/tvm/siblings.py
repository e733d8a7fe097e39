"""A run's best programs shared among its tasks (``tcl tune --share-best K``).

The packaged donors (:mod:`tcl.integrations.tvm.transplant`) are the training networks' best
programs, most of them measured on other hosts. The blocking a host rewards most on the network
being tuned, such as an 8 x 16 block of a matmul's output kept in AVX-512 registers across the
reduction on a Zen 4, is what the run itself finds, one task at a time, after tens of a task's
programs. But the tasks of one network often share their blocks (BERT's dense layers, a
ResNet's convolutions with one epilogue), and a task's best program replayed on another task of
the same blocks keeps the blocking where the loops divide. On a Zen 4, the best program of each
of BERT-tiny's matmuls from a 1,024-trial run, replayed on each of the others, ran within 1.006x
of that matmul's own best (measured again beside them) in 13 of 14 pairs, 1.06x in the
fourteenth (``bench/bench_run_bests.py``; ``bench/README.md``, *The run's best programs shared
among its tasks*).

:class:`RunBests` holds the best program each task of the run has measured so far (one per
task, all tasks' strategies share it); :class:`Siblings` is one task's view of it: each full
round of the task measures up to K of the other tasks' best programs replayed on it (each
once: a replay is made again only when its donor task finds a better program), the most alike
first (:meth:`tcl.integrations.tvm.transplant.Donor.likeness`, then the newest), in place of
as many of its search's lowest-scored picks, so a round measures as many programs as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tcl.integrations.tvm.measure import text_of_trace, to_py
from tcl.integrations.tvm.search import mean_secs
from tcl.integrations.tvm.transplant import Donor, loop_extents, transplanted
from tcl.tuning.allot import FAILED_COST


@dataclass
class RunBests:
    """The best program each task of a run has measured (by its workload key): its mean time
    (s), the version it got (a counter over all tasks' improvements) and the program as a
    :class:`~tcl.integrations.tvm.transplant.Donor`. ``count``: how many of the other tasks'
    best programs a task's full round measures (:class:`Siblings`)."""

    count: int
    best: dict[str, tuple[float, int, Donor]] = field(default_factory=dict)
    versions: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a round shares at least 1 program, not {self.count}")

    def measured(
        self, workload: str, extents: dict[str, tuple[str, ...]], candidates: Any, results: Any
    ) -> None:
        """Notes a batch of the task ``workload`` (its loop ``extents``, as
        :func:`~tcl.integrations.tvm.transplant.loop_extents` reads them): its fastest program
        becomes the task's best where it beats the one held."""
        ran = [
            (mean_secs(r.run_secs), i)
            for i, r in enumerate(results)
            if r.run_secs and not r.error_msg
        ]
        if not ran:
            return
        secs, i = min(ran)
        if secs >= FAILED_COST or secs >= self.best.get(workload, (FAILED_COST,))[0]:
            return
        trace = candidates[i].sch.trace.as_json(remove_postproc=True)
        self.versions += 1
        self.best[workload] = (secs, self.versions, Donor(to_py(trace), extents))


@dataclass
class Siblings:
    """One task's view of the run's :class:`RunBests`: the other tasks' best programs replayed
    on its module ``mod`` with its postprocessors ``postprocs`` (the space generator's)."""

    shared: RunBests
    workload: str
    mod: Any
    postprocs: list[Any]
    extents: dict[str, tuple[str, ...]] = field(init=False)
    # donor task -> (its version replayed, the replay's trace key and candidate; None where
    # the donor's program does not apply)
    replays: dict[str, tuple[int, str | None, Any]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.extents = loop_extents(self.mod)

    def measured(self, candidates: Any, results: Any) -> None:
        """Tells the run's bests what a batch of this task measured."""
        self.shared.measured(self.workload, self.extents, candidates, results)

    def offers(self, known: set[str]) -> list[tuple[str, Any]]:
        """At most ``count`` (trace key, measure candidate) of the other tasks' best programs
        replayed on this task whose key is not in ``known``, the most alike donors first and,
        among equals, the newest; only as many donors are replayed as that takes."""
        blocks = set(self.extents) | {"root"}
        best = self.shared.best
        others = [t for t, (_, _, d) in best.items() if t != self.workload and d.blocks <= blocks]
        # the most alike first, then the newest (no two bests share a version)
        ranked = sorted(others, key=lambda t: (-best[t][2].likeness(self.extents), -best[t][1]))
        out: dict[str, Any] = {}
        for task in ranked:
            _, version, donor = best[task]
            held = self.replays.get(task)
            if held is None or held[0] != version:
                held = self.replays[task] = (version, *self._replayed(donor))
            _, key, candidate = held
            if key is not None and key not in known:
                out.setdefault(key, candidate)  # two donors may replay as one program
                if len(out) == self.shared.count:
                    break
        return list(out.items())

    def into(
        self, fresh: list[Any], known: set[str], explore: int
    ) -> tuple[list[Any], list[tuple[str, Any]]]:
        """A full round's picks ``fresh`` (best-scored first, the search's ``explore`` random
        ones last) with room made for :meth:`offers` not ``known``: the picks less as many of
        the lowest-scored (the random ones stay, and at least one of the search's own), and the
        offers."""
        shared = self.offers(known)
        if not shared:
            return fresh, []
        randoms = min(explore, len(fresh) - 1)
        scored, tail = fresh[: len(fresh) - randoms], fresh[len(fresh) - randoms :]
        return scored[: max(1, len(scored) - len(shared))] + tail, shared

    def _replayed(self, donor: Donor) -> tuple[str | None, Any]:
        """``donor``'s program replayed on this task: (trace key, candidate), or (None, None)
        where it does not apply."""
        found = transplanted(self.mod, self.postprocs, [donor])
        if not found:
            return None, None
        candidate = found[0].candidate
        return text_of_trace(candidate.sch.trace), candidate


__all__ = ["RunBests", "Siblings"]
