"""tcl.tuning.latency: the tuned library's output is checked as it was written, the file that is
timed and deployed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tcl.tuning import platforms
from tcl.tuning.latency import THIS_MACHINE, time_result
from tcl.tuning.user_models import UserModel
from tcl.zoo.extract import import_network

tvm = pytest.importorskip("tvm")


def _library(
    net: torch.nn.Module, inputs: tuple[torch.Tensor, ...], target: Any, path: Path
) -> Path:
    from tvm import relax

    relax.build(import_network(net, inputs), target=target).export_library(str(path))
    return path


def test_the_output_check_reads_the_library_file_that_is_timed(tmp_path: Path) -> None:
    platform = platforms.get("cpu-x86-64-1t")
    target = platform.tvm_target()
    torch.manual_seed(0)
    net, other = torch.nn.Linear(8, 4).eval(), torch.nn.Linear(8, 4).eval()
    inputs = (torch.randn(2, 8),)
    model = UserModel("linear", net, inputs)
    mod = import_network(net, inputs)
    right = _library(net, inputs, target, tmp_path / "right.so")
    wrong = _library(other, inputs, target, tmp_path / "wrong.so")  # other weights

    timings, _, check, where = time_result(right, mod, target, model, platform, rounds=1)
    assert where == THIS_MACHINE and set(timings) >= {"tuned", "untuned", "torch"}
    assert check.tuned_error < 1e-5 and check.untuned_error is not None
    assert check.untuned_error < 1e-5
    _, _, check, _ = time_result(wrong, mod, target, model, platform, rounds=1)
    assert check.tuned_error > 1e-2  # the file's output, not a build held in memory
    assert check.untuned_error is not None and check.untuned_error < 1e-5
