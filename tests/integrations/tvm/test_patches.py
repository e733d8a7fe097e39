"""tcl.integrations.tvm.patches: the fast stack walk gives inspect's frames, and it is installed
where tcl enters TVM, never by importing tcl."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from tcl.integrations.tvm.patches import fast_stack


def _frames(walk: object) -> list[tuple[str, int, str, list[str] | None]]:
    def inner() -> list[inspect.FrameInfo]:
        return walk()  # type: ignore[operator,no-any-return]

    return [(f.filename, f.lineno, f.function, f.code_context) for f in inner()]


def test_fast_stack_gives_the_frames_of_inspect_stack() -> None:
    fast, slow = _frames(fast_stack), _frames(inspect.stack)
    assert len(fast) == len(slow) > 3
    # The calls sit on different lines of `inner` (one frame each); every caller's frame agrees.
    assert fast[1:] == slow[1:]
    assert fast[0][2] == slow[0][2] == "inner"


@pytest.mark.tvm
def test_importing_tcl_patches_nothing_and_entering_tvm_does() -> None:
    pytest.importorskip("tvm")
    code = (
        "import inspect\n"
        "original = inspect.stack\n"
        "import tcl.integrations.tvm.adapter, tcl.tuning.tune, tcl.tuning.collect\n"
        "import tcl.zoo.extract\n"
        "from tcl.integrations.tvm import baselines, measure\n"
        "assert inspect.stack is original, 'patched at import'\n"
        "from tcl.integrations.tvm.patches import fast_stack\n"
        "baselines.make_cost_model('xgb')\n"
        "assert inspect.stack is fast_stack\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.tvm
def test_pool_workers_started_after_the_patch_block_torch() -> None:
    """A worker of TVM's process pool imports torch (tvm_ffi does, wherever it is installed)
    until ``patch_torchless_workers``; one started after it has none, runs its job, and the
    pool's other uses of ``subprocess`` are subprocess's own."""
    pytest.importorskip("tvm")
    code = (
        "import subprocess, sys\n"
        "import torch\n"
        "from tvm.support import popen_pool\n"
        "from tcl.integrations.tvm.patches import patch_torchless_workers\n"
        "def has_torch():\n"
        "    import sys\n"
        "    return sys.modules.get('torch') is not None\n"
        "def in_fresh_worker():\n"
        "    pool = popen_pool.PopenPoolExecutor(max_workers=1)\n"
        "    try:\n"
        "        return pool.submit(has_torch).result()\n"
        "    finally:\n"
        "        pool.shutdown()\n"
        "before = in_fresh_worker()\n"
        "patch_torchless_workers()\n"
        "patch_torchless_workers()\n"
        "after = in_fresh_worker()\n"
        "assert popen_pool.subprocess.TimeoutExpired is subprocess.TimeoutExpired\n"
        "print(before, after)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "True False"
