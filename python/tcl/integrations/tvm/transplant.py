"""Programs of other tasks as candidates for a new one: their schedules replayed on its module.

A tuned task's best program is a MetaSchedule trace: the schedule's instructions with the
decisions its search took (tile factors, unroll depth, where a block is computed). Replayed on
another task of the same structure (the same blocks: a convolution with the same fused
epilogue, of other channels or image sizes), the instructions apply and TVM mends each tile
decision that no longer divides its loop (from the innermost tile out, a factor that does not
divide what is left takes all of it), so the inner tiles, the register and vector blocking the
search found, survive where they divide. A donor whose tile decisions all survive unchanged
was tuned on the same loop extents; the fewer survive, the less of its search carries over.

:func:`transplanted` makes those candidates for a task, ranked by the share of the donor's tile
decisions kept; a cost model ranks the ones that keep as much (``bench/bench_transplant.py``
measures them against the quick round's picks among random programs). :class:`Transplants` is
what a tuning run takes (``tcl tune --transplants N``: each task's quick round measures its best
N in place of as many of the cost model's picks), from the donor file packaged for CPUs
(:func:`donors_path`; :func:`packaged_donors` adds a blocked layout's) or another
(``--donors FILE``). Donors are taken from a MetaSchedule database (:func:`best_programs`), and
kept as gzipped JSON (:func:`save_donors`, :func:`load_donors`: the traces and loop extents
read as data; reading thousands of them from the stores' databases takes minutes, from a donor
file about a second).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tcl.errors import TclError
from tcl.integrations.tvm.measure import entry_key, to_py
from tcl.integrations.tvm.replay import measure_candidate, postprocessed
from tcl.integrations.tvm.search import mean_secs
from tcl.packaged import layout_file, packaged_file
from tcl.tuning.allot import FAILED_COST, MOST_PER_TASK, Allotment


@dataclass
class Transplant:
    """A donor's program replayed on a task: the candidate to measure, and the share of the
    donor's tile decisions that hold unchanged on the task's loops."""

    candidate: Any  # a MetaSchedule MeasureCandidate of the task
    kept: float


@dataclass
class Donor:
    """A measured program of another task: its trace as MetaSchedule's JSON (postprocessors
    left out), and its task's loop extents by block."""

    trace: list[Any]
    extents: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, trace: Any, mod: Any) -> Donor:
        """The donor of a TVM ``Trace`` of ``mod``."""
        return cls(to_py(trace.as_json(remove_postproc=True)), loop_extents(mod))

    @cached_property
    def blocks(self) -> set[str]:
        """The blocks its trace gets by name (read once: every task's replay asks)."""
        return {str(inst[2][0]) for inst in self.trace[0] if inst[0] == "GetSBlock"}

    @cached_property
    def tiles(self) -> list[list[int]]:
        """Its tile decisions in the order of its instructions."""
        insts, decisions = self.trace
        return [
            [int(x) for x in decision]
            for index, decision in sorted(decisions, key=lambda d: int(d[0]))
            if insts[int(index)][0] == "SamplePerfectTile"
        ]

    def likeness(self, extents: dict[str, tuple[str, ...]]) -> float:
        """The share of the extents of this donor's main block (the one of most loops: the
        convolution or matmul whose loops its tile decisions split, not the epilogue) that a
        task of ``extents`` has in the same block and place: 1 for a task of the same loops,
        whatever its epilogue."""
        if not self.extents:
            return 0.0
        name, ours = max(self.extents.items(), key=lambda item: len(item[1]))
        same = sum(a == b for a, b in zip(ours, extents.get(name, ()), strict=False))
        return same / len(ours) if ours else 0.0


# The packaged donor files, by the device their programs run on: the best program of each
# workload of the zoo's training networks in the repository's CPU stores (never a workload of the
# held-out networks alone), written by ``bench/bench_transplant.py --save-donors``.
DONORS = {"cpu": "donors_cpu.json.gz"}
# Convolutions in a blocked layout (tcl tune --conv-layout) are other blocks (conv2d_NCHWc): no
# donor of DONORS replays on them, so a blocked run also takes the best programs of the training
# networks' blocked tasks, searched in that layout (bench/README.md: The packaged model and
# donors for blocked convolutions).
LAYOUT_DONORS = {("cpu", "NCHW16c"): "donors_cpu_nchw16c.json.gz"}
# The donors a task's transplants are replayed from (Transplants.limit): the most alike, by their
# main block's loop extents. A replay takes milliseconds; all 2,857 packaged donors took 14-18 s
# a ResNet-50 convolution, the 64 most alike 0.2-0.9 s, and picked as well (bench/README.md,
# *Other tasks' best programs as first picks*).
DONOR_LIMIT = 64
# The least share of a donor's tile decisions a transplant must keep to be measured: one that
# keeps none was tuned for other loops, and its inner tiles were mended away (two such picks of
# a MobileNet-V2 convolution ran 20x slower than a random program).
MIN_KEPT = 0.5


# What to do about a donor file missing from the install.
DONORS_REMEDY = "run bench/bench_transplant.py --save-donors"


def donors_path(device: str = "cpu") -> Path:
    """The packaged donor file for programs that run on ``device``."""
    return packaged_file(DONORS, device, "donor file", DONORS_REMEDY)


def packaged_donors(device: str = "cpu", conv_layout: str | None = None) -> list[Donor]:
    """The packaged donors for a run on ``device`` whose convolutions are in ``conv_layout``:
    ``device``'s, and the layout's where one is packaged (:data:`LAYOUT_DONORS`)."""
    donors = load_donors(donors_path(device))
    blocked = layout_file(LAYOUT_DONORS, device, conv_layout, "donor file", DONORS_REMEDY)
    return donors + load_donors(blocked) if blocked is not None else donors


def best_records(database: Any, only: Container[str] | None = None) -> dict[str, Any]:
    """The tuning record of the fastest measured program of each workload in a MetaSchedule
    ``database``, by its key (:func:`entry_key`; only those in ``only`` where given), in the
    database's order; a workload whose every program failed has none."""
    best: dict[str, tuple[float, Any]] = {}
    keys: dict[Any, str] = {}  # a workload's key serializes its module: once per workload
    for record in database.get_all_tuning_records():
        key = keys.get(record.workload)
        if key is None:
            key = keys[record.workload] = entry_key(record.workload)
        secs = mean_secs(record.run_secs) if record.run_secs else FAILED_COST
        if secs >= FAILED_COST or (only is not None and key not in only):
            continue
        if key not in best or secs < best[key][0]:
            best[key] = (secs, record)
    return {key: record for key, (_, record) in best.items()}


def best_programs(database: Any, only: Container[str] | None = None) -> list[Donor]:
    """The fastest measured program of each workload in a MetaSchedule ``database``, as
    :func:`best_records` finds them, as donors."""
    records = best_records(database, only).values()
    return [Donor.of(record.trace, record.workload.mod) for record in records]


# What a donor file says it is (save_donors): gzipped JSON, read as data
DONORS_FORMAT = "tcl-donors"
DONORS_VERSION = 1


def save_donors(path: str | Path, donors: list[Donor], about: dict[str, Any]) -> int:
    """Writes ``donors`` (and ``about``: where they came from) to ``path`` as gzipped JSON,
    atomically; returns the bytes written."""
    payload = {
        "format": DONORS_FORMAT,
        "version": DONORS_VERSION,
        "about": about,
        "donors": [{"trace": d.trace, "extents": d.extents} for d in donors],
    }
    data = gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), 9, mtime=0)
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    return len(data)


def load_donors(path: str | Path) -> list[Donor]:
    """The donors of a file :func:`save_donors` wrote; :class:`tcl.errors.TclError` naming the
    file and what is wrong where it is not one."""
    try:
        payload = json.loads(gzip.decompress(Path(path).read_bytes()))
    except (OSError, EOFError, ValueError) as err:
        raise TclError(f"{path}: not a gzipped JSON donor file ({err})") from None
    if not isinstance(payload, dict) or payload.get("format") != DONORS_FORMAT:
        raise TclError(f"{path}: not a tcl donor file (format is not {DONORS_FORMAT!r})")
    if payload.get("version") != DONORS_VERSION:
        raise TclError(f"{path}: donor file version {payload.get('version')!r}, not 1")
    donors = []
    for i, entry in enumerate(payload.get("donors", [])):
        try:
            insts, decisions = entry["trace"]
            extents = {str(k): tuple(str(x) for x in v) for k, v in entry["extents"].items()}
            if not isinstance(insts, list) or not isinstance(decisions, list):
                raise TypeError("the trace is not two lists")
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise TclError(f"{path}: donor {i} is malformed ({err})") from None
        donors.append(Donor([insts, decisions], extents))
    return donors


def block_names(mod: Any) -> set[str]:
    """The names of the blocks of a task's module (a donor's trace gets its blocks by name)."""
    return set(re.findall(r'T\.sblock\("([^"]+)"', mod.script())) - {"root"}


def loop_extents(mod: Any) -> dict[str, tuple[str, ...]]:
    """Each block's iteration extents (as text: a dynamic one is an expression), by name."""
    from tvm.s_tir import Schedule

    sch = Schedule(mod)
    return {
        name: tuple(str(v.dom.extent) for v in sch.get(sch.get_sblock(name)).iter_vars)
        for name in sorted(block_names(mod))
    }


def _tiles(trace: Any) -> list[list[int]]:
    """The trace's tile decisions in the order of its instructions."""
    decisions = trace.decisions
    return [
        [int(x) for x in decisions[inst]]
        for inst in trace.insts
        if inst.kind.name == "SamplePerfectTile" and inst in decisions
    ]


def kept_share(donor: Donor, replayed: Any) -> float:
    """The share of ``donor``'s tile decisions that ``replayed`` (the TVM ``Trace`` of its
    replay on a task) holds unchanged; 0 where their counts differ."""
    ours, theirs = donor.tiles, _tiles(replayed)
    if not ours or len(ours) != len(theirs):
        return 0.0
    return sum(a == b for a, b in zip(ours, theirs, strict=True)) / len(ours)


def transplanted(
    mod: Any, postprocs: list[Any], donors: Iterable[Donor], limit: int | None = None
) -> list[Transplant]:
    """Each donor's program that applies to ``mod`` (a task's module), replayed on it with the
    task's postprocessors (``postprocs``, the space generator's, for the task's target), as a
    candidate; one per distinct program, the most decisions kept first (a stable order: among
    equals, the donors'). ``limit``: replay only that many donors, the most alike first
    (:meth:`Donor.likeness`; a replay takes milliseconds, a store holds thousands)."""
    from tvm.s_tir import Schedule, Trace
    from tvm_ffi import structural_hash

    extents = loop_extents(mod)
    names = set(extents) | {"root"}
    fitting = [d for d in donors if d.blocks <= names]
    if limit is not None:
        likeness = [d.likeness(extents) for d in fitting]
        order = sorted(range(len(fitting)), key=lambda i: -likeness[i])
        fitting = [fitting[i] for i in order[:limit]]
    seen: set[int] = set()  # the programs replayed: postprocessors run once for each
    out = []
    base = Schedule(mod)  # analysed once: a copy is cheaper than another Schedule of ``mod``
    for donor in fitting:
        sch = base.copy()
        try:
            Trace.apply_json_to_schedule(donor.trace, sch)
            key = structural_hash(sch.mod)
            if key in seen:  # donors that differ only where the task's loops mend them alike
                continue
            seen.add(key)
            if not postprocessed(sch, postprocs):
                continue
        except Exception:  # TVM raises many kinds of error for a trace that cannot apply
            continue
        out.append(Transplant(measure_candidate(sch), kept_share(donor, sch.trace)))
    out.sort(key=lambda t: -t.kept)
    return out


@dataclass
class Transplants:
    """What a tuning run takes from other tasks' best programs: each task's ``count`` best
    transplants for its quick round and the ``later`` next ones for the round of transplants
    after it (:func:`transplanted` from the ``limit`` most alike ``donors``, at least
    ``min_kept`` of their tile decisions kept), the most kept first and, among as many kept,
    the cost model's best-scored. ``shares``: where given (``tcl tune --transplant-allot
    time``), a task's round of transplants is its share of ``later`` a task by the time it
    holds once every task has been measured (:class:`tcl.tuning.allot.Allotment`: at least
    one, at most :data:`~tcl.tuning.allot.MOST_PER_TASK` times ``later``). ``exact_growth``
    (``time-exact``): a share above ``later`` takes only transplants that keep every tile
    decision of their donor (programs tuned on the task's own loops), never fewer than
    ``later``; a share below it is taken as it is. ``apart``: the
    programs each task's round of transplants measured, by task (``measure.task_of``), which
    no model ranked: a hand-off to the learner does not count them
    (:class:`tcl.integrations.tvm.blend.Blend`'s ``uncounted``)."""

    donors: list[Donor]
    count: int = 1
    later: int = 0
    limit: int = DONOR_LIMIT
    min_kept: float = MIN_KEPT
    shares: Allotment | None = None
    exact_growth: bool = False
    apart: dict[str, int] = field(default_factory=dict)

    @property
    def most_later(self) -> int:
        """The most transplants a task's round of them can measure."""
        return self.later * MOST_PER_TASK if self.shares is not None else self.later

    def later_of(self, workload: str, exact: int = 0) -> int:
        """The transplants of the round after the quick one of the task ``workload`` (its
        workload key), ``exact`` of whose next ones keep every tile decision of their donor:
        ``later``, or its share of it by time."""
        if self.shares is None or not self.later:
            return self.later
        share = self.shares.picks(workload, self.later)
        if self.exact_growth and share > self.later:
            return max(self.later, min(share, exact))
        return share

    def ranked(self, context: Any, cost_model: Any = None) -> list[Transplant]:
        """The transplants of the task of ``context`` (a MetaSchedule tune context whose design
        space is made: its postprocessors), ranked by ``cost_model`` among equals where given."""
        postprocs = list(context.space_generator.postprocs)
        found = [
            t
            for t in transplanted(context.mod, postprocs, self.donors, self.limit)
            if t.kept >= self.min_kept
        ]
        wanted = self.count + self.most_later
        if cost_model is not None and wanted and len(found) > 1:
            # all that keep as much as the last wanted: the first picks do not hang on ``later``
            ties = [t for t in found if t.kept >= found[min(wanted, len(found)) - 1].kept]
            scores = cost_model.predict(context, [t.candidate for t in ties])
            order = sorted(range(len(ties)), key=lambda i: (-ties[i].kept, -float(scores[i])))
            found = [ties[i] for i in order]
        return found[:wanted]
