"""tcl.integrations.tvm.console: MetaSchedule's log routing survives handlers an earlier run
left behind, and the progress bar and its estimate."""

from __future__ import annotations

import io
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from tcl.integrations.tvm.console import (
    LOGGER,
    estimated_ms,
    make_progress_callback,
    route_log,
)

from conftest import matmul_module

pytestmark = pytest.mark.tvm


def _create_loggers(log_dir: Path) -> None:
    """What every MetaSchedule tuning call does first (tvm 0.27's logging.create_loggers)."""
    from tvm.s_tir.meta_schedule.logging import create_loggers

    create_loggers(str(log_dir), [{"log_dir": str(log_dir), "logger_name": f"{LOGGER}.task_0"}])


@pytest.fixture()
def restore_metaschedule_logger() -> object:
    logger = logging.getLogger(LOGGER)
    level = logger.level
    yield None
    route_log(verbose=False)
    logger.setLevel(level)


@pytest.mark.usefixtures("restore_metaschedule_logger")
def test_stale_handlers_break_metaschedule_and_route_log_clears_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger(LOGGER)
    logger.addHandler(logging.StreamHandler(io.StringIO()))  # a handler without a name
    with pytest.raises(AttributeError):  # the failure seen when tests ran in one process
        _create_loggers(tmp_path)
    closed = io.StringIO()
    stale = logging.StreamHandler(closed)
    stale.set_name("stale")
    logger.addHandler(stale)
    closed.close()
    route_log(verbose=False)
    assert not logger.handlers
    _create_loggers(tmp_path)
    # INFO reaches the work directory's file, not the console, unless verbose.
    console = next(h for h in logger.handlers if h.get_name() == f"{LOGGER}.console")
    assert console.level == logging.WARNING
    logging.getLogger(f"{LOGGER}.runner").info("a line for the file")
    logging.getLogger(f"{LOGGER}.runner").warning("a line for both")
    for handler in logger.handlers:
        handler.flush()
    log_file = tmp_path / f"{LOGGER}.logging.task_scheduler.log"
    assert "a line for the file" in log_file.read_text()
    assert "a line for both" in log_file.read_text()
    shown = capsys.readouterr().out
    assert "a line for both" in shown and "a line for the file" not in shown
    route_log(verbose=True)
    _create_loggers(tmp_path)
    console = next(h for h in logger.handlers if h.get_name() == f"{LOGGER}.console")
    assert console.level == logging.INFO


def test_estimate_needs_every_task() -> None:
    weights = {0: 2.0, 1: 1.0}
    assert math.isnan(estimated_ms({0: 1e-3}, weights))
    assert estimated_ms({0: 1e-3, 1: 4e-3}, weights) == pytest.approx(6.0)


def _measured(callback: Any, task_id: int, costs: list[float]) -> None:
    """Hands ``callback`` a measured batch of task ``task_id``: one program a cost (s)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.builder import BuilderResult
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm import measure as tm

    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    candidates = tm.random_candidates(matmul_module(16), target, len(costs), seed=0)
    built = [BuilderResult("a.tar", None) for _ in costs]
    ran = [RunnerResult(run_secs=[cost], error_msg=None) for cost in costs]
    callback.apply(ms.task_scheduler.RoundRobin(), task_id, candidates, built, ran)


def test_the_bar_counts_trials_or_a_budgets_seconds() -> None:
    """Without a time budget the bar counts trials, past its total where the last round
    overshoots; with one it counts the budget's seconds (``clock``) and shows the trials beside
    the tasks, past the budget where every task's first round outlasts it."""
    from tqdm import tqdm

    bar = tqdm(total=4, file=io.StringIO())
    counted = make_progress_callback(bar, [1.0, 2.0])
    _measured(counted, 0, [1e-3, 2e-3])
    assert bar.n == 2 and "tasks 1/2, estimate after every task" in bar.postfix
    _measured(counted, 1, [5e-3, 4e-3, 3e-3])
    assert bar.n == 5 and bar.total == 5  # one past the trials asked for
    assert "tasks 2/2, est. 7.000 ms" in bar.postfix  # 1 x 1 ms + 2 x 3 ms

    now = [12.7]
    bar = tqdm(total=60, file=io.StringIO())
    timed = make_progress_callback(bar, [1.0], clock=lambda: now[0])
    _measured(timed, 0, [1e-3, 2e-3])
    assert bar.n == 12 and "2 trials, tasks 1/1, est. 1.000 ms" in bar.postfix
    now[0] = 75.2  # the first round ran past a 1-minute budget
    _measured(timed, 0, [5e-4])
    assert bar.n == 75 and bar.total == 75 and "3 trials" in bar.postfix


def test_native_stderr_goes_to_the_log_and_python_stderr_to_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import os
    import subprocess
    import sys

    from tcl.integrations.tvm.console import native_stderr_to

    log = tmp_path / "logs" / "tvm_native.log"
    with native_stderr_to(log):
        os.write(2, b"executable.cc:276: Warning: Scope Saving\n")  # as TVM's C++ logger does
        subprocess.run([sys.executable, "-c", "import os; os.write(2, b'from a worker\\n')"])
        print("a progress bar", file=sys.stderr)
    os.write(2, b"after the block\n")
    err = capfd.readouterr().err
    assert "a progress bar" in err and "after the block" in err
    assert "Scope Saving" not in err and "from a worker" not in err
    assert log.read_text() == "executable.cc:276: Warning: Scope Saving\nfrom a worker\n"
    with native_stderr_to(None):  # --verbose: nothing redirected
        os.write(2, b"shown\n")
    assert "shown" in capfd.readouterr().err
