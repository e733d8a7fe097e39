"""What a MetaSchedule run shows on the terminal: one progress bar, and its log in files.

MetaSchedule logs through the ``tvm.s_tir.meta_schedule`` logger: a console handler on stdout
(every task's table after every round, ~1,600 lines for one network) and files under
``WORK_DIR/logs``. Each tuning call builds those handlers anew from the handlers the logger
already has, so a handler left from an earlier run in the same process (one bound to a stream
that has since been closed, or one without a name) breaks the next run. :func:`route_log` clears
them before every run and sets what reaches the terminal; :func:`make_progress_callback`
reports each measured batch on a progress bar.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

K = TypeVar("K")

LOGGER = "tvm.s_tir.meta_schedule"


def route_log(verbose: bool) -> None:
    """Call before MetaSchedule makes its loggers (tune contexts, ``tune_tasks``): removes (and
    closes) the handlers earlier runs left on MetaSchedule's loggers, and lets its console show
    INFO lines only when ``verbose`` (the files under WORK_DIR/logs always get everything)."""
    manager = logging.root.manager
    names = [LOGGER] + [n for n in manager.loggerDict if n.startswith(LOGGER + ".")]
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
    # MetaSchedule gives its console handler the level the logger has when the run starts.
    logging.getLogger(LOGGER).setLevel(logging.INFO if verbose else logging.WARNING)


def estimated_ms(best: Mapping[K, float], weights: Mapping[K, float]) -> float:
    """The network's estimated latency (ms): the sum over tasks of weight x best measured cost
    (seconds); NaN until every task has a measured program."""
    if len(best) < len(weights):
        return math.nan
    return sum(weights[k] * cost for k, cost in best.items() if k in weights) * 1e3


def make_progress_callback(
    bar: Any, weights: list[float], clock: Callable[[], float] | None = None
) -> Any:
    """A MetaSchedule measure callback that advances ``bar`` (a tqdm bar) by each measured
    batch and shows the tasks measured and the best estimated latency so far. The bar counts
    trials, or with ``clock`` (seconds into a time budget, ``Deadline.elapsed``) the budget's
    seconds, the trials then shown beside the tasks: a budget ends by time, not at its
    notional trial count, so a bar of trials would show a run stopping short of it."""
    from tcl.integrations.tvm.callbacks import measure_callback

    by_task = dict(enumerate(weights))
    best: dict[int, float] = {}
    trials = 0

    def show(_: Any, task_id: int, candidates: Any, __: Any, runner_results: Any) -> None:
        nonlocal trials
        for result in runner_results:
            if result.error_msg is None and result.run_secs:
                cost = sum(float(s) for s in result.run_secs) / len(result.run_secs)
                best[task_id] = min(cost, best.get(task_id, math.inf))
        trials += len(candidates)
        estimate = estimated_ms(best, by_task)
        shown = "estimate after every task" if math.isnan(estimate) else f"est. {estimate:.3f} ms"
        counted = f"{trials} trials, " if clock is not None else ""
        bar.set_postfix_str(f"{counted}tasks {len(best)}/{len(weights)}, {shown}", refresh=False)
        advance(bar, len(candidates), clock)

    return measure_callback(show)


def advance(bar: Any, trials: int, clock: Callable[[], float] | None = None) -> None:
    """Moves ``bar`` on by ``trials`` measured, or with ``clock`` to the budget's seconds so
    far (whatever ``trials``: 0 brings it up to date); past its total where a run overshoots
    it (MetaSchedule's last round may overshoot the trials by part of a batch, and every
    task's first round is measured whatever the time)."""
    step = trials if clock is None else max(0, int(clock()) - bar.n)
    bar.total = max(bar.total, bar.n + step)
    bar.update(step)


@contextlib.contextmanager
def native_stderr_to(path: Path | None) -> Iterator[None]:
    """Inside the block, what TVM's C++ logger and the build workers write to file descriptor 2
    (``executable.cc: Warning: Scope Saving ...`` and the like, tens of lines a build) goes to
    ``path`` (appended), while Python's ``sys.stderr`` — the progress bar, warnings, errors —
    still reaches the terminal through a copy of the original descriptor. ``None``: nothing is
    redirected (``--verbose``)."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    terminal = os.dup(2)
    python_stderr = sys.stderr
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    sys.stderr = os.fdopen(os.dup(terminal), "w", buffering=1, encoding="utf-8", errors="replace")
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stderr.close()
        sys.stderr = python_stderr
        os.dup2(terminal, 2)
        os.close(terminal)
