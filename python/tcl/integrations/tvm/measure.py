"""Candidate generation and measurement on stock MetaSchedule (apache-tvm 0.27).

- Candidates are random samples of a task's design space (MetaSchedule's ``ReplayTrace``: the
  design-space traces with freshly sampled decisions, post-processed), as TenSet sampled Ansor's
  space, not only the tuner's best.
- Builds run in a pool whose workers live across batches (the stock builder starts fresh
  workers for each batch and pays TVMScript's slow import inside the build timeout).
- Runs happen one candidate at a time, after the batch is built, so the measured kernel never
  shares the machine with our own builds.
- For a runner on this machine, a CPU candidate is linked into a shared library where it is
  built (:mod:`tcl.integrations.tvm.linking`), not by the runner before each run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import BuilderInput, BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.builder.local_builder import _serialize_params, _worker_func
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig as EvaluatorConfig
from tvm.s_tir.meta_schedule.runner import RunnerInput
from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

from tcl.integrations.tvm.linking import export_linked
from tcl.integrations.tvm.patches import (
    enters_tvm,
    patch_torchless_workers,
    stock_builder_init,
    worker_init,
)


def to_py(obj: Any) -> Any:
    """TVM containers and immediates (``IntImm`` in traces) to plain JSON-able Python."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (tvm.tirx.IntImm, tvm.tirx.FloatImm)):
        return obj.value
    if isinstance(obj, (list, tuple)) or type(obj).__name__ == "Array":
        return [to_py(x) for x in obj]
    if isinstance(obj, dict) or type(obj).__name__ == "Map":
        return {str(k): to_py(v) for k, v in obj.items()}
    return str(obj)


def trace_json(sch: Any) -> list[Any]:
    return to_py(sch.trace.as_json())  # type: ignore[no-any-return]


def trace_key(trace: list[Any]) -> str:
    """The identity of a program within its task: its trace with every decision."""
    return json.dumps(trace, separators=(",", ":"))


def text_of_trace(trace: Any) -> str:
    """``trace_key`` of a TVM ``Trace`` (a database record's, a candidate's) without the copy:
    TVM hands the trace over as Python lists already, and only its immediates need
    :func:`to_py`. A batch's traces are written five to six times faster by MetaSchedule's record
    writer (:mod:`tcl.integrations.tvm.trace_texts`, of which this is the reference twin)."""
    return json.dumps(trace.as_json(), separators=(",", ":"), default=to_py)


def workload_json(mod: Any) -> list[str]:
    """``[structural hash, base64 module]``, the line JSONDatabase writes for a workload."""
    return to_py(ms.database.Workload(mod).as_json())  # type: ignore[no-any-return]


def workload_key(mod: Any) -> str:
    """A task's identity in a database and across a run: its workload's structural hash."""
    return entry_key(ms.database.Workload(mod))


def entry_key(workload: Any) -> str:
    """:func:`workload_key` of a database's workload entry (a record's ``workload``)."""
    return str(workload.as_json()[0])


def task_of(context: Any) -> str:
    """The tuning task a tune context holds: its module's structural hash (a replayed context
    has no task name; two tasks of one network never share a hash)."""
    from tvm.s_tir.meta_schedule.utils import shash2hex

    return str(shash2hex(context.mod))


def measured_programs(results: list[Any]) -> int:
    """How many of a measured batch's programs ran (a cost, no error)."""
    return sum(1 for r in results if r.error_msg is None and r.run_secs)


@enters_tvm
def replay_context(mod: Any, target: Any, seed: int = 0) -> Any:
    """A tune context of ``mod`` on ``target`` that draws random programs of its design space
    (MetaSchedule's ReplayTrace); its postprocessors are set once the space is generated."""
    return ms.TuneContext(
        mod=mod,
        target=target,
        space_generator="post-order-apply",
        search_strategy=ms.search_strategy.ReplayTrace(),
        task_name="main",
        rand_state=seed,
        num_threads=1,
    )


def random_candidates(mod: Any, target: Any, n: int, seed: int) -> list[Any]:
    """``n`` random programs from the design space of ``mod`` (may repeat; dedupe by trace)."""
    ctx = replay_context(mod, target, seed)
    ctx.pre_tuning(
        max_trials=n,
        num_trials_per_iter=n,
        design_spaces=ctx.generate_design_space(),
        database=ms.database.MemoryDatabase(),
        cost_model=None,
    )
    return list(ctx.generate_measure_candidates() or [])


# A candidate the builder did not start because its batch's time was up: not a failure.
NOT_BUILT = "not built: the time budget ended"


@derived_object
class PersistentLocalBuilder(PyBuilder):
    """LocalBuilder whose worker processes survive across batches (``maximum_process_uses``).
    ``deadline``: a time budget's (:class:`tcl.integrations.tvm.deadline.Deadline`, set by the
    tuner); a build that would start after its ``builds_until`` is not started, and the
    candidate's result is :data:`NOT_BUILT`; a build is cut after its ``build_timeout``
    instead of ``timeout_sec``. ``opt_level``: LLVM's optimisation level of a CPU's builds
    (:func:`at_opt_level`; None: the target's own). ``quick``: a quick first round's
    :class:`tcl.integrations.tvm.sync_runner.QuickTiming` (set by the tuner); a batch handed
    out while its ``now`` is set is built at its ``opt_level`` where it has one. ``link``: a
    CPU candidate is exported as a shared library linked in the build worker
    (:func:`tcl.integrations.tvm.linking.export_linked`) for a runner on this machine to open
    as it is; otherwise as MetaSchedule's tar of objects, which the runner links before each
    run (an RPC device links with its own compiler)."""

    def __init__(
        self,
        max_workers: int = 2,
        timeout_sec: float = 60.0,
        opt_level: int | None = None,
        link: bool = False,
    ) -> None:
        super().__init__()
        self.timeout_sec, self.max_workers, self.opt_level = timeout_sec, max_workers, opt_level
        self.link = link
        self.deadline: Any = None
        self.quick: Any = None
        patch_torchless_workers()
        self.pool = PopenPoolExecutor(
            max_workers=max_workers,
            timeout=timeout_sec,
            initializer=worker_init,
            maximum_process_uses=256,
        )

    def start(self) -> list[Any]:
        """Starts the worker processes now, in the background, rather than at the first build
        (each imports TVM: seconds): a first job for each, which the builds queue behind. The
        jobs' futures give each worker's process id."""
        # each submit finds the pool's threads busy starting a worker and makes another thread
        return [self.pool.submit(_started) for _ in range(self.max_workers)]

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        results = []
        until = self.deadline.builds_until() if self.deadline is not None else None
        timeout = self.timeout_sec
        if self.deadline is not None:
            timeout = self.deadline.build_timeout(timeout)
        self.pool._timeout = timeout  # the pool sends each job its ``_timeout`` as it starts it
        level = self.opt_level
        if self.quick is not None and self.quick.now and self.quick.opt_level is not None:
            level = self.quick.opt_level
        jobs = [
            (
                build_candidate,
                export_linked if self.link else None,  # None: MetaSchedule's tar
                b.mod,
                at_opt_level(b.target, level),
                _serialize_params(b.params),
            )
            for b in build_inputs
        ]
        for r in self.pool.map_with_error_catching(lambda job: _build_until(until, job), jobs):
            if r.status == StatusKind.COMPLETE and r.value is None:
                results.append(BuilderResult(None, NOT_BUILT))
            elif r.status == StatusKind.COMPLETE:
                results.append(BuilderResult(r.value, None))
            elif r.status == StatusKind.TIMEOUT:
                results.append(BuilderResult(None, f"build timeout after {timeout:g} s"))
            else:
                results.append(BuilderResult(None, f"build error: {r.value}"))
        return results


def at_opt_level(target: Any, level: int | None) -> Any:
    """``target`` with LLVM's optimisation level ``level`` where it is a CPU's (``llvm``) and
    ``level`` is given; otherwise ``target`` itself. LLVM's code generation and optimisation
    and its machine code are most of a CPU kernel's build, and level 1 builds faster than TVM's
    3, though some programs then run several times slower (bench/README.md, *Candidates built
    at a lower LLVM level*)."""
    if level is None or target.kind.name != "llvm":
        return target
    return tvm.target.Target({**target.export(), "opt-level": level})


def _build_until(until: float | None, job: tuple[Any, ...]) -> str | None:
    """In a build worker: the artifact's path of ``job`` (TVM's ``_worker_func`` arguments), or
    None where the job starts at or after ``until`` (``time.time()``; None: never too late)."""
    if until is not None and time.time() >= until:
        return None
    path: str = _worker_func(*job)
    return path


def build_candidate(mod: Any, target: Any, params: Any) -> Any:
    """In a build worker: TVM's default build of a candidate (``local_builder.default_build``,
    its reference twin) without the import of the tensor intrinsics that it starts with.
    Registering them parses their TVMScript, 4 s of a build worker's start on one core of a
    Zen 3; a candidate arrives tensorized by the search's postprocessors, and its build looks
    no intrinsic up. ``params`` must be None, as there."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return tvm.tirx.build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target)


def _started() -> int:
    """A build worker's first job, once its process is up: its process id."""
    return os.getpid()


def pinned_worker_init(cpus: tuple[int, ...]) -> None:
    """Runner worker initializer: pin to ``cpus`` (when given), then :func:`worker_init`."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(cpus))
    worker_init()


@dataclass
class Measurement:
    """One candidate's result: every repeat's seconds, or an error kind and message."""

    run_secs: list[float] | None
    error: str = ""  # "", "build", "run", "timeout"
    message: str = ""


def make_runner(
    evaluator: EvaluatorConfig,
    timeout_sec: float,
    *,
    rpc: tuple[str, int, str] | None,
    threads: int,
    alloc_repeat: int = 1,
) -> Any:
    """A LocalRunner (threads via TVM_NUM_THREADS; single-threaded, pinned to the last core this
    process may use) or an RPCRunner through a tracker. ``alloc_repeat``: each candidate is
    timed on this many fresh allocations of its arguments, ``evaluator``'s repeats on each (its
    costs are all of them, allocation by allocation)."""
    patch_torchless_workers()  # before the runner's pool starts its worker
    if rpc is not None:
        host, port, key = rpc
        config = ms.runner.RPCConfig(
            tracker_host=host,
            tracker_port=port,
            tracker_key=key,
            session_timeout_sec=int(timeout_sec),
        )
        return ms.runner.RPCRunner(
            rpc_config=config, evaluator_config=evaluator, alloc_repeat=alloc_repeat, max_workers=1
        )
    os.environ["TVM_NUM_THREADS"] = str(threads)  # the runner's worker inherits it at start
    cpus = runner_cores(threads)
    return ms.runner.LocalRunner(
        timeout_sec=timeout_sec,
        evaluator_config=evaluator,
        alloc_repeat=alloc_repeat,
        initializer=lambda: pinned_worker_init(cpus),
    )


def runner_cores(threads: int) -> tuple[int, ...]:
    """The cores a local runner's worker is pinned to: a single-threaded one to the last core
    this process may use (of those ``taskset`` leaves it, not of the machine), where it may
    use more than one; none otherwise (it keeps this process's)."""
    from tcl.tuning.platforms import usable_cores

    cores = usable_cores()
    return (cores[-1],) if threads == 1 and len(cores) > 1 else ()


@dataclass
class BuiltBatch:
    """Candidates after building: runner inputs for those that built, failures for the rest."""

    candidates: list[Any]
    inputs: list[Any]  # RunnerInput of each built candidate
    index: list[int]  # candidate index of each runner input
    failures: dict[int, Measurement]
    artifacts: list[str]


def device_kind(target: Any) -> str:
    """Where a build for ``target`` runs: "cuda" (the first visible GPU) or "cpu"; the name
    ``tvm.device`` takes, here or on an RPC remote."""
    return "cuda" if target.kind.name == "cuda" else "cpu"


def search_threads(target: Any) -> int:
    """Threads of MetaSchedule's search of a task for ``target``: 2 where the candidates run on
    this machine's CPU (a small machine whose measurements the search must leave room for), every
    core of the host where they run on a GPU (on an H100's 16-core host, a 2-thread search took
    40-50% of a BERT-tiny run)."""
    return max(2, os.cpu_count() or 2) if device_kind(target) == "cuda" else 2


@enters_tvm
def build(builder: Any, candidates: list[Any], target: Any) -> BuiltBatch:
    built = builder.build([BuilderInput(c.sch.mod, target) for c in candidates])
    batch = BuiltBatch(candidates, [], [], {}, [b.artifact_path for b in built if b.artifact_path])
    device = device_kind(target)
    for i, (c, b) in enumerate(zip(candidates, built, strict=True)):
        if b.error_msg is not None:
            kind = "timeout" if "timeout" in str(b.error_msg).lower() else "build"
            batch.failures[i] = Measurement(None, kind, str(b.error_msg)[:2000])
        else:
            batch.inputs.append(RunnerInput(b.artifact_path, device, c.args_info))
            batch.index.append(i)
    return batch


def run(runner: Any, batch: BuiltBatch, which: list[int] | None = None) -> dict[int, Measurement]:
    """Runs the built candidates (or those of ``which``, by candidate index), one at a time."""
    chosen = [k for k, i in enumerate(batch.index) if which is None or i in which]
    out = {}
    for k, future in zip(chosen, runner.run([batch.inputs[k] for k in chosen]), strict=True):
        r = future.result()
        if r.error_msg is not None:
            kind = "timeout" if "timeout" in str(r.error_msg).lower() else "run"
            out[batch.index[k]] = Measurement(None, kind, str(r.error_msg)[:2000])
        else:
            out[batch.index[k]] = Measurement([float(x) for x in r.run_secs])
    return out


def shutdown(*workers: Any) -> None:
    """Stops the worker processes of builders and runners (they outlive a dropped reference).

    TVM's ``PopenPoolExecutor.shutdown`` is not used: a worker still starting (its process up,
    its pipes not yet opened, as right after :meth:`PersistentLocalBuilder.start`) makes it
    raise with the pool's lock held, and the pool's ``__del__`` then blocks forever on that lock
    at whatever garbage collection next finds the pool."""
    for worker in workers:
        pool = getattr(worker, "pool", None)
        if pool is None or pool._shutdown:
            continue
        pool._shutdown = True  # its __del__ does nothing now, whatever happens below
        _kill_workers(pool)  # ends the jobs in flight, so that the pool's threads finish
        pool._threadpool.shutdown(wait=True)
        _kill_workers(pool)  # and any worker that a thread was starting meanwhile


def _kill_workers(pool: PopenPoolExecutor) -> None:
    with pool._lock:
        popen_workers = list(pool._worker_map.values())
    for popen_worker in popen_workers:
        try:
            popen_worker.kill()
        except AttributeError:  # starting: TVM's kill closes pipes that are not there yet
            process, popen_worker._proc = popen_worker._proc, None  # its __del__: a no-op
            if process is not None:
                process.kill()
                process.wait()
        _close_pipes(popen_worker)


def _close_pipes(popen_worker: Any) -> None:
    """Closes the pipes of a worker whose start was caught half-way: one opened before the
    kill, or both opened by the starting thread after it (TVM's kill skips a worker without a
    process). Left open, they surface as a ResourceWarning at whatever collection finds them."""
    for name in ("_reader", "_writer"):
        pipe = getattr(popen_worker, name, None)
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(OSError):  # the process is gone: flushing its pipe fails
                pipe.close()


def cleanup(batch: BuiltBatch) -> None:
    for path in batch.artifacts:
        try:
            os.remove(path)
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


def measure(
    builder: Any, runner: Any, candidates: list[Any], target: Any, *, remeasure: int = 0
) -> tuple[list[Measurement], dict[int, list[float]]]:
    """Builds every candidate, then runs the built ones one at a time.

    ``remeasure`` > 0 runs that many of the successfully measured candidates a second time
    (for the noise figures); the second run's seconds come back by candidate index.
    """
    batch = build(builder, candidates, target)
    try:
        results = {**batch.failures, **run(runner, batch)}
        ok = [i for i in batch.index if results[i].run_secs][:remeasure]
        again = (
            {i: m.run_secs for i, m in run(runner, batch, ok).items() if m.run_secs} if ok else {}
        )
    finally:
        cleanup(batch)
    return [results[i] for i in range(len(candidates))], again


@enters_tvm
def tune_tir(
    mod: Any,
    target: Any,
    work_dir: str,
    trials: int,
    *,
    per_iter: int = 8,
    population: int = 32,
    cost_model: Any = "xgb",
    seed: int = 0,
) -> Any:
    """A small stock ``ms.tune_tir`` of one TIR module with this machine's builder and runner
    settings (patched workers, 3 stored repeats); returns the JSONDatabase."""
    from tcl.integrations.tvm.console import route_log

    route_log(verbose=False)
    patch_torchless_workers()
    return ms.tune_tir(
        mod,
        target,
        work_dir=work_dir,
        max_trials_global=trials,
        num_trials_per_iter=per_iter,
        builder=ms.builder.LocalBuilder(
            max_workers=2, timeout_sec=60, initializer=stock_builder_init
        ),
        runner=ms.runner.LocalRunner(
            timeout_sec=30,
            initializer=worker_init,
            evaluator_config=EvaluatorConfig(number=1, repeat=3, min_repeat_ms=0),
        ),
        strategy=ms.search_strategy.EvolutionarySearch(population_size=population),
        cost_model=cost_model,
        seed=seed,
    )
