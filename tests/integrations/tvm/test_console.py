"""tcl.integrations.tvm.console: MetaSchedule's log routing survives handlers an earlier run
left behind, and the progress estimate."""

from __future__ import annotations

import io
import logging
import math
from pathlib import Path

import pytest

from tcl.integrations.tvm.console import LOGGER, estimated_ms, route_log

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
