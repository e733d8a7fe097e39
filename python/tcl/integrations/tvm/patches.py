"""Workarounds that stock apache-tvm 0.27 needs on this stack.

TVMScript calls ``inspect.stack()`` while parsing; on Python 3.11 with torch in ``sys.modules``
that walk takes tens of seconds (``import tvm.s_tir.tensor_intrin``: 43.6 s), and every fresh
MetaSchedule builder worker pays it inside its 30 s build timeout, so a tune measures nothing.
A stack walk that skips the per-frame module search gives the same frames in a fraction of the
time. Every function where tcl calls into TVM is marked :func:`enters_tvm`, which installs it
first; MetaSchedule's builder and runner workers get it from :func:`worker_init`, their
``initializer``, and block torch (:func:`patch_torchless_workers`). Importing tcl patches nothing.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import subprocess
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def fast_stack(context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.stack`` without resolving each frame's module (which scans sys.modules)."""
    frame: FrameType | None = sys._getframe(1)
    out: list[inspect.FrameInfo] = []
    while frame is not None:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        lines: list[str] | None = None
        index: int | None = None
        if context > 0:
            line = linecache.getline(filename, lineno)
            if line:
                lines, index = [line], 0
        info: Any = inspect.FrameInfo(frame, filename, lineno, frame.f_code.co_name, lines, index)
        out.append(info)
        frame = frame.f_back
    return out


def patch_inspect_stack() -> None:
    """Installs :func:`fast_stack` as ``inspect.stack`` (idempotent)."""
    inspect.stack = fast_stack


def enters_tvm(func: Callable[P, R]) -> Callable[P, R]:
    """Marks a function where tcl calls into TVM: the workarounds are in place before it runs."""

    @functools.wraps(func)
    def entered(*args: P.args, **kwargs: P.kwargs) -> R:
        patch_inspect_stack()
        return func(*args, **kwargs)

    return entered


def die_with_parent() -> None:
    """Makes this process receive SIGKILL when the thread that started it ends (Linux; a no-op
    elsewhere). TVM's pool workers otherwise outlive a killed tuner or test run, re-parented to
    init, at ~0.5 GB each."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import os
    import signal

    parent = os.getppid()
    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def worker_init() -> None:
    """Initializer for the worker processes of tcl's builder and runner: die with the process
    that started them, and patch."""
    die_with_parent()
    patch_inspect_stack()


def stock_builder_init() -> None:
    """Initializer for MetaSchedule's own builder's worker processes: :func:`worker_init`, then
    the slow TVMScript import of the tensor intrinsics, which its default build function
    imports, paid once outside any build timeout."""
    worker_init()
    import tvm.s_tir.tensor_intrin  # noqa: F401


def without_torch() -> None:
    """Makes ``import torch`` fail in this process, where it has not been imported. tvm_ffi
    imports torch whenever it is installed (2.9 of the 4.5 s a process took to import TVM on a
    2-core Zen 3), and torch loads its own OpenMP runtime beside TVM's thread pool; a process
    that only builds, loads or times TVM programs needs neither."""
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]


# A pool worker's command: :func:`without_torch` before TVM is imported, about 4 s of each
# worker's start on one core of a Zen 3. With the tensor intrinsics' import left out too
# (``measure.build_candidate``) a run's three workers are up after 6.4 s instead of 27.3
# (bench/README.md, *Workers that start without torch or the tensor intrinsics*).
TORCHLESS_WORKER = (
    "from tcl.integrations.tvm.patches import without_torch; without_torch(); import runpy; "
    "runpy.run_module('tvm.exec.popen_worker', run_name='__main__', alter_sys=True)"
)


class _TorchlessPopen:
    """``subprocess`` as TVM's process pool sees it: its worker command swapped for
    :data:`TORCHLESS_WORKER` (same arguments: the pipes' descriptors), all else unchanged."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(cmd: list[str], **kwargs: Any) -> Any:
        if cmd[1:3] == ["-m", "tvm.exec.popen_worker"]:
            cmd = [cmd[0], "-c", TORCHLESS_WORKER, *cmd[3:]]
        return subprocess.Popen(cmd, **kwargs)


def patch_torchless_workers() -> None:
    """Makes every worker process that TVM's ``PopenPoolExecutor`` starts from now on (the
    builders' and runners' of MetaSchedule) block torch before it imports TVM (idempotent)."""
    from tvm.support import popen_pool

    if not isinstance(popen_pool.subprocess, _TorchlessPopen):
        popen_pool.subprocess = _TorchlessPopen()


def fixed_mlp_model() -> Any:
    """MetaSchedule's MLPModel (the TenSet-MLP port) with the bugs that crash it fixed:
    batches of one candidate, fewer than five workloads (its 20% held-out split is then
    empty), ``StepLR(verbose=...)`` under torch 2.13, and an update whose candidates all failed.
    The fixes are applied once, to the ``mlp_model`` module."""
    from tvm.s_tir.meta_schedule.cost_model import mlp_model

    if not getattr(mlp_model, "_tcl_fixed", False):
        _fix_mlp_model(mlp_model)
    return mlp_model.MLPModel()


def _fix_mlp_model(mlp_model: Any) -> None:
    forward = mlp_model.SegmentSumMLP.forward  # (1, n) for a batch of one: flatten
    mlp_model.SegmentSumMLP.forward = lambda self, s, f: forward(self, s, f).reshape(-1)
    _train_without_held_out_when_small(mlp_model)
    _skip_empty_updates(mlp_model)
    _step_lr_with_verbose(mlp_model)
    mlp_model._tcl_fixed = True


def _train_without_held_out_when_small(mlp_model: Any) -> None:
    """With too few workloads for one held out, train on all of them (and validate on them)
    instead of crashing on an empty validation set."""
    import itertools
    import math
    import random

    train_full = mlp_model.SegmentSumMLPTrainer.train_full

    class _NoHeldOut:
        @staticmethod
        def sample(population: Any, k: int) -> list[Any]:
            return []

    def train_full_small(self: Any) -> Any:
        if math.floor(len(self.state.data) * self.test_split) >= 1:
            return train_full(self)
        concatenate, loader = mlp_model.np.concatenate, mlp_model.SegmentDataLoader
        groups = list(self.state.data.values())

        def concat(arrays: Any, *a: Any, **k: Any) -> Any:
            arrays = list(arrays)
            return concatenate(arrays or [g.min_cost / g.costs for g in groups], *a, **k)

        def load(
            feats: Any, results: Any = None, batch_size: int = 128, shuffle: bool = True
        ) -> Any:
            every = list(itertools.chain.from_iterable(g.features for g in groups))
            return loader(
                feats if len(feats) else every, results, batch_size=batch_size, shuffle=shuffle
            )

        mlp_model.random, mlp_model.np.concatenate, mlp_model.SegmentDataLoader = (
            _NoHeldOut,
            concat,
            load,
        )
        try:
            return train_full(self)
        finally:
            mlp_model.random, mlp_model.np.concatenate, mlp_model.SegmentDataLoader = (
                random,
                concatenate,
                loader,
            )

    mlp_model.SegmentSumMLPTrainer.train_full = train_full_small


def _skip_empty_updates(mlp_model: Any) -> None:
    """A tuning batch whose candidates all failed to build or run leaves no features; the stock
    update then crashes on np.min([]) (seen tuning BERT-tiny). Nothing to learn: skip it."""
    trainer_update = mlp_model.SegmentSumMLPTrainer.update

    def update_if_any(self: Any, features: Any, costs: Any, group_hash: str) -> Any:
        if len(costs) == 0:
            return None
        return trainer_update(self, features, costs, group_hash)

    mlp_model.SegmentSumMLPTrainer.update = update_if_any


def _step_lr_with_verbose(mlp_model: Any) -> None:
    """torch 2.13's StepLR has no ``verbose``, which the MLP passes: accept and drop it."""
    import torch

    step_lr = torch.optim.lr_scheduler.StepLR
    if "verbose" not in step_lr.__init__.__code__.co_varnames:

        class _StepLR(step_lr):  # type: ignore[misc,valid-type]
            def __init__(self, *args: Any, verbose: Any = None, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)

        mlp_model.torch.optim.lr_scheduler.StepLR = _StepLR
