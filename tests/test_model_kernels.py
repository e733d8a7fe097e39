"""The C++ CPU kernels of the Mamba block (cpp/scan.cc, cpp/causal_conv.cc) against their PyTorch
twins: values and gradients, optional terms, strided channels-last operands, clamped decays,
thread counts, and the whole model in float32 (kernels) against float64 (twins)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from tcl import _core, model
from tcl.model import ModelConfig
from tcl.model.conv import causal_conv1d, causal_conv1d_cpu, causal_conv1d_torch
from tcl.model.scan import selective_scan_cpu, selective_scan_torch


def _channels_last_inputs(
    seed: int, batch: int, dim: int, state: int, length: int, a_scale: float = 4.0
) -> list[torch.Tensor]:
    """Scan operands in mamba_ssm's layout, made as the model makes them: transposed views of
    channels-last tensors, u and z column slices of one projection, B and C of another."""
    g = torch.Generator().manual_seed(seed)
    xz = torch.randn(batch, length, 2 * dim, generator=g)
    proj = torch.randn(batch, length, 3 + 2 * state, generator=g)
    u, z = xz[..., :dim], xz[..., dim:]
    B, C = proj[..., 3 : 3 + state], proj[..., 3 + state :]
    delta = torch.randn(batch, length, dim, generator=g)
    A = -torch.rand(dim, state, generator=g) * a_scale
    D, bias = torch.randn(dim, generator=g), torch.randn(dim, generator=g)
    leaves = [t.requires_grad_() for t in (xz, proj, delta, A, D, bias)]
    del leaves
    return [
        u.transpose(1, 2),
        delta.transpose(1, 2),
        A,
        B.transpose(1, 2),
        C.transpose(1, 2),
        D,
        z.transpose(1, 2),
        bias,
    ]


def _leaves(inputs: list[torch.Tensor | None]) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for t in inputs:
        if t is None:
            continue
        base = t if t.is_leaf else t._base
        assert base is not None
        seen.setdefault(id(base), base)
    return list(seen.values())


def _compare(
    inputs: list[torch.Tensor | None], softplus: bool, rtol: float = 2e-5, atol: float = 2e-5
) -> None:
    fast = selective_scan_cpu(*inputs, delta_softplus=softplus)  # type: ignore[arg-type]
    slow = selective_scan_torch(*inputs, delta_softplus=softplus)  # type: ignore[arg-type]
    torch.testing.assert_close(fast, slow, rtol=rtol, atol=atol)
    weights = torch.randn_like(slow)
    leaves = _leaves(inputs)
    grads_fast = torch.autograd.grad((fast * weights).sum(), leaves, allow_unused=True)
    grads_slow = torch.autograd.grad((slow * weights).sum(), leaves, allow_unused=True)
    for a, b in zip(grads_fast, grads_slow, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            scale = float(b.abs().max()) + 1.0
            torch.testing.assert_close(a, b, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize(
    ("use_d", "use_z", "use_bias", "softplus"), list(itertools.product([True, False], repeat=4))
)
def test_scan_kernel_matches_torch_with_every_optional_term(
    use_d: bool, use_z: bool, use_bias: bool, softplus: bool
) -> None:
    u, delta, A, B, C, D, z, bias = _channels_last_inputs(0, batch=3, dim=20, state=8, length=11)
    _compare(
        [u, delta, A, B, C, D if use_d else None, z if use_z else None, bias if use_bias else None],
        softplus,
    )


@pytest.mark.parametrize(("dim", "state", "length"), [(64, 8, 40), (17, 3, 1), (33, 16, 2)])
def test_scan_kernel_shapes(dim: int, state: int, length: int) -> None:
    _compare(_channels_last_inputs(1, batch=4, dim=dim, state=state, length=length), True)


def test_scan_kernel_clamped_decays_have_zero_gradient_as_torch() -> None:
    # A * dt far below -40 for most entries: exp() is clamped and the gradient through it is zero.
    _compare(_channels_last_inputs(2, batch=2, dim=16, state=4, length=9, a_scale=400.0), True)


def test_scan_kernel_threads_agree() -> None:
    inputs = _channels_last_inputs(3, batch=9, dim=24, state=8, length=13)
    arrays = [
        x.detach().transpose(1, 2).contiguous().numpy() if x.dim() == 3 else x.detach().numpy()
        for x in inputs
    ]
    arrays[2] = np.ascontiguousarray(arrays[2].T)  # A as (state, dim)
    out = {n: _core.selective_scan_forward(*arrays, True, n) for n in (1, 2, 4)}
    assert np.array_equal(out[1], out[2]) and np.array_equal(out[1], out[4])
    dout = np.random.default_rng(0).standard_normal(out[1].shape).astype(np.float32)
    grads = {n: _core.selective_scan_backward(*arrays, True, dout, n) for n in (1, 3)}
    for one, three in zip(grads[1], grads[3], strict=True):
        # Per-element gradients do not depend on the split; batch sums only in rounding.
        np.testing.assert_allclose(one, three, rtol=1e-5, atol=1e-5)
    assert np.array_equal(grads[1][0], grads[3][0])


def test_scan_kernel_rejects_bad_operands() -> None:
    u = np.zeros((2, 5, 4), np.float32)
    with pytest.raises(ValueError, match="operand delta must have shape"):
        _core.selective_scan_forward(
            u, u[:, :4], np.zeros((3, 4), np.float32), u, u, None, None, None, True, 1
        )
    with pytest.raises(ValueError, match="rows evenly spaced"):
        _core.selective_scan_forward(
            u,
            u[:, ::-1],
            np.zeros((3, 4), np.float32),
            u[..., :3],
            u[..., :3],
            None,
            None,
            None,
            True,
            1,
        )


@pytest.mark.parametrize(("length", "use_bias"), [(1, True), (3, False), (4, True), (37, True)])
def test_causal_conv_kernel_matches_conv1d(length: int, use_bias: bool) -> None:
    g = torch.Generator().manual_seed(length)
    xz = torch.randn(5, length, 40, generator=g, requires_grad=True)
    weight = torch.randn(20, 1, 4, generator=g, requires_grad=True)
    bias = torch.randn(20, generator=g, requires_grad=True) if use_bias else None
    x = xz[..., 20:]  # a column slice, read in place
    fast, slow = causal_conv1d_cpu(x, weight, bias), causal_conv1d_torch(x, weight, bias)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
    leaves = [t for t in (xz, weight, bias) if t is not None]
    dout = torch.randn_like(slow)
    grads_fast = torch.autograd.grad((fast * dout).sum(), leaves)
    grads_slow = torch.autograd.grad((slow * dout).sum(), leaves)
    for a, b in zip(grads_fast, grads_slow, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-4)
    # float64 goes to the twin.
    torch.testing.assert_close(
        causal_conv1d(x.double(), weight.double(), None),
        causal_conv1d_torch(x.double(), weight.double(), None),
    )


def test_mamba_model_float32_kernels_match_float64_twins() -> None:
    torch.manual_seed(0)
    net = model.build(ModelConfig(arch="mamba", vocab_size=50, max_len=24)).eval()
    kinds = torch.randint(1, 50, (6, 24))
    fields = torch.randn(6, 24, 10)
    fast = net(kinds, fields)  # float32: the C++ kernels
    slow = net.double()(kinds, fields.double())  # float64: the PyTorch twins
    torch.testing.assert_close(fast.double(), slow, rtol=1e-4, atol=1e-4)
