"""Constant arithmetic folded with numpy is what relax's FoldConstant computes with LLVM, bit for
bit, and a network folded so has the same tasks, kernels and constants."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import numpy as np
import pytest
import torch

from tcl.zoo import constants
from tcl.zoo.constants import evaluate, fold_constants
from tcl.zoo.extract import export_program, extracted_tasks, fuse, import_program

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

TARGET = "llvm"


def _edgy(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Random values with the cases IEEE arithmetic treats apart: zeros of both signs,
    negatives (NaN under sqrt), infinities, subnormals and huge values (overflow)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype) * rng.choice([1e-3, 1.0, 1e3], shape)
    flat = x.reshape(-1)
    info = np.finfo(dtype)
    special = [0.0, -0.0, -1.0, np.inf, -np.inf, info.tiny / 4, info.max / 2]
    n = min(len(special), flat.size)
    flat[:n] = np.array(special[:n], dtype=dtype)
    return x


def _main_of(build: Any) -> Any:
    """A relax module whose main takes nothing and returns ``build(block_builder)``."""
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        with bb.dataflow():
            out = bb.emit_output(build(bb))
        bb.emit_func_output(out)
    return bb.get()


def _result(mod: Any) -> np.ndarray:
    """What main returns: a constant, or the constant its output is bound to."""
    body = mod["main"].body
    value = body.body if not body.blocks else body.blocks[-1].bindings[-1].value
    assert isinstance(value, tvm.ir.expr.GenericConst), f"not folded: {value}"
    return value.value.numpy()


def _by_llvm(mod: Any) -> np.ndarray:
    """The reference twin: relax legalizes the calls and FoldConstant runs them, built by LLVM."""
    with tvm.target.Target(TARGET):
        folded = relax.transform.FoldConstant()(relax.transform.LegalizeOps()(mod))
    return _result(folded)


CASES: dict[str, Any] = {
    "add": lambda a, b, _: relax.op.add(a, b),
    "broadcast add": lambda a, _, row: relax.op.add(a, row),
    "subtract": lambda a, b, _: relax.op.subtract(a, b),
    "multiply": lambda a, b, _: relax.op.multiply(a, b),
    "divide": lambda a, b, _: relax.op.divide(a, b),
    "sqrt": lambda a, *_: relax.op.sqrt(a),
    "expand_dims": lambda a, *_: relax.op.expand_dims(a, [0, -1]),
    "permute_dims": lambda a, *_: relax.op.permute_dims(a, [2, 0, 1]),
    "transpose": lambda a, *_: relax.op.permute_dims(a),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_operation_is_llvms_bit_for_bit(case: str, dtype: str) -> None:
    a = relax.const(_edgy((3, 4, 5), dtype, 0), dtype)
    b = relax.const(_edgy((3, 4, 5), dtype, 1), dtype)
    row = relax.const(_edgy((5,), dtype, 2), dtype)
    mod = _main_of(lambda bb: CASES[case](a, b, row))
    ours, theirs = _result(fold_constants(mod)), _by_llvm(mod)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()  # NaNs and signed zeros included


def test_a_chain_folds_through_its_bindings_as_batch_norm_leaves_it() -> None:
    var = relax.const(np.abs(_edgy((8,), "float32", 2)))

    def batch_norm_scale(bb: Any) -> Any:
        expanded = bb.emit(relax.op.expand_dims(var, [1, 2]))
        shifted = bb.emit(relax.op.add(expanded, relax.const(1e-5, "float32")))
        return relax.op.sqrt(shifted)

    mod = _main_of(batch_norm_scale)
    ours = _result(fold_constants(mod))
    assert ours.shape == (8, 1, 1) and ours.tobytes() == _by_llvm(mod).tobytes()


def test_what_it_does_not_fold_is_left_for_foldconstant() -> None:
    ints = relax.const(np.arange(6, dtype="int32"))
    halves = relax.const(np.ones(6, dtype="float16"))
    for build in (lambda bb: relax.op.add(ints, ints), lambda bb: relax.op.exp(halves)):
        mod = _main_of(build)
        value = fold_constants(mod)["main"].body.blocks[-1].bindings[-1].value
        assert isinstance(value, relax.Call)  # still a call: FoldConstant evaluates it
    assert evaluate("relax.add", None, [np.ones(2, "float32"), np.ones(2, "float64")]) is None


LAYOUTS: dict[str, tuple[tuple[int, ...], Any]] = {
    "OIHW16o weights": ((32, 8, 3, 3), lambda o, i, h, w: (o // 16, i, h, w, o % 16)),
    "NCHW8c": ((1, 24, 4, 5), lambda n, c, h, w: (n, c // 8, h, w, c % 8)),
    "out of blocks": ((1, 2, 4, 5, 16), lambda n, b, h, w, c: (n, b * 16 + c, h, w)),
    "depthwise OIHW16o": ((32, 1, 3, 3), lambda o, i, h, w: (o // 16, i, h, w, o % 16)),
}


@pytest.mark.parametrize("case", list(LAYOUTS))
def test_a_layout_transform_moves_each_element_where_llvm_does(case: str) -> None:
    shape, index_map = LAYOUTS[case]
    a = relax.const(_edgy(shape, "float32", 0))
    mod = _main_of(lambda bb: relax.op.layout_transform(a, index_map=index_map))
    ours, theirs = _result(fold_constants(mod)), _by_llvm(mod)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()  # data movement: no arithmetic to round


def test_a_layout_transform_that_pads_is_left_for_foldconstant() -> None:
    # 24 channels into blocks of 16: the second block is half padding, which numpy leaves
    a = relax.const(_edgy((1, 24, 2, 2), "float32", 0))
    block = lambda n, c, h, w: (n, c // 16, h, w, c % 16)  # noqa: E731
    padded = relax.op.layout_transform(a, index_map=block, pad_value=0.0)
    value = fold_constants(_main_of(lambda bb: padded))["main"].body.blocks[-1].bindings[-1].value
    assert isinstance(value, relax.Call)
    unpadded = relax.op.layout_transform(a, index_map=block)  # no pad value: still not a layout
    assert constants.laid_out(_edgy((1, 24, 2, 2), "float32", 0), unpadded.attrs.index_map) is None


class _ConvBatchNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 4)
        with torch.no_grad():  # running statistics as a trained network has them
            self.norm.running_mean.uniform_(-1, 1)
            self.norm.running_var.uniform_(0.5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm(self.conv(x)))
        return self.head(y.mean(dim=(2, 3)))


def _all_constant_calls(mod: Any) -> int:
    count = 0
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            for block in func.body.blocks:
                for binding in block.bindings:
                    value = binding.value
                    count += (
                        isinstance(value, relax.Call)
                        and isinstance(value.op, tvm.ir.Op)
                        and bool(value.args)
                        and all(isinstance(a, tvm.ir.expr.GenericConst) for a in value.args)
                    )
    return count


def _network(mod: Any) -> tuple[dict[str, float], Counter[str], list[str]]:
    """Its tasks (workload hash: weight), its fused kernels' hashes and its constants' bytes."""
    import tvm_ffi

    from tcl.tuning.tune import task_weights

    target = tvm.target.Target(TARGET)
    tasks = task_weights(extracted_tasks(mod, target))
    fused = fuse(mod, target)
    kernels = Counter(
        str(tvm_ffi.structural_hash(f))
        for f in fused.functions.values()
        if not isinstance(f, relax.Function)
    )
    data: list[str] = []
    relax.analysis.post_order_visit(
        fused["main"].body,
        lambda e: (
            data.append(hashlib.sha1(e.value.numpy().tobytes()).hexdigest())
            if isinstance(e, tvm.ir.expr.GenericConst)
            else None
        ),
    )
    return tasks, kernels, sorted(data)


def test_a_network_folded_with_numpy_has_foldconstants_tasks_kernels_and_constants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _ConvBatchNorm().eval()
    program = export_program(model, (torch.randn(1, 3, 8, 8),))
    folded = import_program(program)
    monkeypatch.setattr(constants, "fold_constants", lambda mod: mod)
    reference = import_program(program)  # left to FoldConstant, as relax does it
    assert _all_constant_calls(folded) == 0 < _all_constant_calls(reference)
    ours, theirs = _network(folded), _network(reference)
    assert ours[0] and ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert ours[2] and ours[2] == theirs[2]
