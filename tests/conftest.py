"""Shared fixtures: Ansor logs (generated, and real ones where TCL_ANSOR_DIR names them), a real
MetaSchedule database, comparisons, a function run through tcl's PyTorch import."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tcl.records import RecordSet
from tcl.records.synthetic import write_ansor_logs

REPO = Path(__file__).resolve().parent.parent
# Ansor-format logs: the project's own (tcl.records.synthetic, shaped like TVM's tutorial logs)
# everywhere, and the real tutorial logs too where TCL_ANSOR_DIR names them (.ci/run sets it
# where they lie beside the checkout): each test taking them runs once per source.
ANSOR_DIR = os.environ.get("TCL_ANSOR_DIR", "")
ANSOR_SOURCES = ["generated", "real"] if ANSOR_DIR else ["generated"]


# A test still running after this many seconds fails (SIGALRM interrupts even a wait on a lock),
# so that a hang is reported with its traceback instead of holding CI until CI's own limit. The
# longest test takes about two minutes on two cores.
TEST_TIME_LIMIT_S = int(os.environ.get("TCL_TEST_TIME_LIMIT_S", "900"))


def _expired(signum: int, frame: Any) -> None:
    raise TimeoutError(f"still running after {TEST_TIME_LIMIT_S} s (TCL_TEST_TIME_LIMIT_S)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.alarm(TEST_TIME_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session", params=ANSOR_SOURCES)
def ansor_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "real":
        if not Path(ANSOR_DIR).is_dir():
            raise pytest.UsageError(f"TCL_ANSOR_DIR={ANSOR_DIR!r} is not a directory")
        return Path(ANSOR_DIR)
    return write_ansor_logs(tmp_path_factory.mktemp("ansor"))


@pytest.fixture(scope="session")
def ansor_lines(ansor_dir: Path) -> list[bytes]:
    """Every record line of the Ansor logs."""
    lines = []
    for path in sorted(ansor_dir.glob("*.json")):
        lines += [
            ln for ln in path.read_bytes().split(b"\n") if ln.strip() and not ln.startswith(b"#")
        ]
    return lines


def matmul_module(n: int, name: str = "C") -> Any:
    """An n x n x n matmul as a one-function IRModule (a MetaSchedule workload), its block
    named ``name``."""
    import tvm
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name=name)
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


# The target of tests that replay programs on a task: any x86-64 CPU builds its programs.
X86_TARGET = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}


def space_postprocs(mod: Any) -> list[Any]:
    """The postprocessors of ``mod``'s design space on :data:`X86_TARGET` (a transplant is
    replayed with them)."""
    import tvm

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.patches import patch_inspect_stack

    patch_inspect_stack()  # a tune context imports TVM's tensor intrinsics: slow without it
    context = tm.replay_context(mod, tvm.target.Target(X86_TARGET))
    context.generate_design_space()
    return list(context.space_generator.postprocs)


def random_programs(mod: Any, n: int, seed: int = 1) -> list[Any]:
    """``n`` random programs of ``mod`` on :data:`X86_TARGET` (measure candidates)."""
    import tvm

    from tcl.integrations.tvm import measure as tm

    return tm.random_candidates(mod, tvm.target.Target(X86_TARGET), n, seed)


def scored_by_trace(score: Any, calls: list[dict[str, float]] | None = None) -> Any:
    """A MetaSchedule cost model that scores each program by ``score(trace key)`` (the key of
    ``tcl.integrations.tvm.measure.text_of_trace``) and learns nothing; each call's scores by
    key are appended to ``calls`` where given."""
    from tcl.integrations.tvm.measure import text_of_trace

    return scored_by_candidate(lambda c: score(text_of_trace(c.sch.trace)), calls)


def scored_by_candidate(score: Any, calls: list[dict[str, float]] | None = None) -> Any:
    """A MetaSchedule cost model that scores each program by ``score(measure candidate)`` and
    learns nothing; each call's scores by trace key are appended to ``calls`` where given."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.measure import text_of_trace

    @derived_object
    class ByCandidate(ms.cost_model.PyCostModel):
        def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
            keys = [text_of_trace(c.sch.trace) for c in candidates]
            scores = [float(score(c)) for c in candidates]
            if calls is not None:
                calls.append(dict(zip(keys, scores, strict=True)))
            return np.array(scores, dtype="float64")

        def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
            pass

        def load(self, path: str) -> None:
            pass

        def save(self, path: str) -> None:
            pass

    return ByCandidate()


def applying(f: Any) -> Any:
    """A torch module whose forward is ``f`` (a function of tensors)."""
    import torch

    class Apply(torch.nn.Module):
        def forward(self, *args: torch.Tensor) -> Any:
            return f(*args)

    return Apply()


def imported_output(f: Any, *inputs: Any) -> np.ndarray:
    """``f`` (a function of tensors) exported, imported through tcl's importer, compiled for
    this CPU and run on ``inputs``: its first output."""
    import tvm
    from tvm import relax

    from tcl.zoo.extract import export_program, import_program

    mod = import_program(export_program(applying(f), inputs))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in inputs])
    return (out if hasattr(out, "numpy") else out[0]).numpy()  # type: ignore[no-any-return]


def checked_report(check: Any, **fields: Any) -> Any:
    """A run's report (``tcl.tuning.report.TuneReport``) with the output check ``check`` (an
    ``OutputCheck``): made-up figures, ``fields`` in their place."""
    from tcl.tuning.report import TuneReport

    figures: dict[str, Any] = {
        "network": "net",
        "platform": "p",
        "tasks": 1,
        "tune_seconds": 1.0,
        "latency_ms": 1.0,
        "untuned_ms": 2.0,
        "torch_ms": 2.0,
    }
    return TuneReport(
        **{**figures, **fields},
        max_abs_error=check.tuned_error,
        untuned_max_abs_error=check.untuned_error,
        output_scale=check.scale,
    )


@pytest.fixture(scope="session")
def ms_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MetaSchedule JSONDatabase from a real tiny tune (a 64x64 matmul, 16 trials)."""
    pytest.importorskip("tvm")
    import tvm

    from tcl.integrations.tvm import measure

    work_dir = tmp_path_factory.mktemp("ms_db")
    measure.tune_tir(
        matmul_module(64),
        tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 2}),
        str(work_dir),
        16,
    )
    return work_dir


def assert_same_records(a: RecordSet, b: RecordSet) -> None:
    """Every column, table and report of two record sets is equal (NaN equals NaN)."""
    assert sorted(a.columns) == sorted(b.columns)
    for name in a.columns:
        x, y = a.columns[name], b.columns[name]
        assert x.dtype == y.dtype, name
        assert x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert a.tasks.to_lists() == b.tasks.to_lists()
    assert a.targets == b.targets
    assert a.files == b.files
    assert a.vocab == b.vocab
    assert a.tokenizer == b.tokenizer
    assert (a.report.lines, a.report.skipped, a.report.unknown_kinds) == (
        b.report.lines,
        b.report.skipped,
        b.report.unknown_kinds,
    )
    # Where each skip happened must agree; the wording of JSON syntax errors differs.
    where = {k: v[:3] for k, v in a.report.skip_examples.items()}
    assert where == {k: v[:3] for k, v in b.report.skip_examples.items()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def rpc_loopback() -> Iterator[tuple[str, int, str]]:
    """A TVM RPC tracker and one server registered with it, both on 127.0.0.1:
    (tracker host, tracker port, device key)."""
    port = _free_port()
    # Each in a session of its own, killed as a group: TVM runs the tracker and the server in
    # worker processes of the command started here, which outlive a kill of that command alone.
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    tracker_args = ["--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1)]
    tracker = subprocess.Popen(
        [sys.executable, "-m", "tvm.exec.rpc_tracker", *tracker_args],
        **quiet,  # type: ignore[call-overload]
    )
    server = None
    try:
        time.sleep(2)
        server_args = ["--host", "127.0.0.1", "--tracker", f"127.0.0.1:{port}"]
        server = subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_server", *server_args, "--key", "tcl-loopback"],
            **quiet,  # type: ignore[call-overload]
        )
        time.sleep(3)
        yield ("127.0.0.1", port, "tcl-loopback")
    finally:
        for p in (server, tracker):
            if p is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Mamba model trained for 30 steps on the bundled sample records (the MetaSchedule
    integration tests' cost model)."""
    from tcl import model as models
    from tcl.records import sample_data_path
    from tcl.records.dataset import load_dataset
    from tcl.training.train import TrainConfig, train

    data = load_dataset(sample_data_path())
    config = models.ModelConfig(vocab_size=len(data.records.vocab), d_model=16, n_layers=1)
    net, _ = train(data, None, config, TrainConfig(max_steps=30), log=lambda *a: None)
    path = tmp_path_factory.mktemp("model") / "m.pt"
    models.save(path, net, data.records.vocab, data.records.tokenizer)
    return path
