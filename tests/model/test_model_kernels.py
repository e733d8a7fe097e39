"""The C++ CPU kernels of the Mamba block (cpp/scan.cc, cpp/causal_conv.cc), in every
instruction-set build this CPU runs, against float64 PyTorch twins: values and gradients, optional
terms, strided channels-last operands, clamped decays, thread counts, and the whole model.

Tolerances follow from the float32 arithmetic, not from one machine's results: each bound is
(rounding errors per step) x (steps) x (unit roundoff) x (the magnitude of what was summed, the
same computation on absolute values), so cancellation, growth (decays above 1 when dt < 0) and
FMA contraction (the AVX2 and AVX-512 builds) are all covered by one derivation."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tcl import _core, model
from tcl.errors import TclError
from tcl.model import ModelConfig, kernels
from tcl.model.conv import causal_conv1d, causal_conv1d_cpu, causal_conv1d_torch
from tcl.model.scan import selective_scan_cpu, selective_scan_torch

UNIT_ROUNDOFF = 2.0**-24  # float32
SMALLEST_NORMAL = 2.0**-126  # the kernels flush float32 denormals to zero (cpp/isa.h)


@pytest.fixture(params=kernels.supported())
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test once per kernel build this CPU supports."""
    with kernels.forced(request.param):
        yield request.param


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


def _scan_magnitude(
    inputs: list[torch.Tensor | None], softplus: bool
) -> tuple[torch.Tensor, float]:
    """The scan on absolute values in float64 (every product and sum of the recurrence taken in
    magnitude; decays are positive already) and the largest |dt * A| among unclamped decays.
    Differentiable: its gradients are the magnitudes of the terms each input gradient sums."""
    u, delta, A, B, C, D, z, bias = inputs
    assert u is not None and delta is not None and A is not None and B is not None and C is not None
    x = delta if bias is None else delta + bias[:, None]
    dt = F.softplus(x) if softplus else x  # (batch, dim, length)
    log_decay = dt[..., None] * A[None, :, None, :]  # (batch, dim, length, state)
    unclamped = log_decay >= -40.0
    kappa = float(log_decay.detach().abs()[unclamped].max()) if bool(unclamped.any()) else 0.0
    decay = log_decay.clamp(min=-40.0).exp()
    drive = (dt * u).abs()[..., None] * B.abs().transpose(1, 2)[:, None]
    h = torch.zeros_like(decay[:, :, 0])
    ys = []
    for t in range(u.shape[2]):
        h = decay[:, :, t] * h + drive[:, :, t]
        ys.append((h * C.abs()[:, None, :, t]).sum(-1))
    y = torch.stack(ys, dim=-1)
    if D is not None:
        y = y + (D[:, None] * u).abs()
    if z is not None:
        y = y * F.silu(z).abs()
    return y, kappa


def _scan_error_bound(length: int, state: int, kappa: float) -> float:
    """Relative error of the float32 scan against the magnitude of its terms. Per step: dt
    (softplus: two ~2 ulp functions and an add, <= 6u), the exponent dt * A (its absolute error,
    kappa * 7u, is the decay's relative error) plus exp's 2 ulp (4u), the product and the drive
    dt * u * B (<= 10u together); errors of earlier steps carry through the decays, so they add
    up over the length. Then the state sum (state + 1 roundings), D * u (2u) and the silu gate
    (<= 10u)."""
    return (length * (7.0 * kappa + 14.0) + state + 13.0) * UNIT_ROUNDOFF


def _float64(inputs: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    return [None if t is None else t.detach().double().requires_grad_() for t in inputs]


def _compare(inputs: list[torch.Tensor | None], softplus: bool) -> None:
    """The float32 kernel against the float64 twin: values elementwise, each gradient normwise,
    both against the magnitude of the terms they sum."""
    ref, mag = _float64(inputs), _float64(inputs)
    fast = selective_scan_cpu(*inputs, delta_softplus=softplus)  # type: ignore[arg-type]
    slow = selective_scan_torch(*ref, delta_softplus=softplus)  # type: ignore[arg-type]
    magnitude, kappa = _scan_magnitude(mag, softplus)
    assert fast.dtype == torch.float32 and slow.dtype == torch.float64
    length, state = inputs[0].shape[2], inputs[2].shape[1]  # type: ignore[union-attr]
    gamma = _scan_error_bound(length, state, kappa)
    error = (fast.detach().double() - slow.detach()).abs()
    size = magnitude.detach()
    assert bool((error <= gamma * size + SMALLEST_NORMAL).all()), float(
        (error / size).max() / gamma
    )
    weights = torch.randn_like(slow)
    present = [i for i, t in enumerate(inputs) if t is not None]

    def grads(
        out: torch.Tensor, w: torch.Tensor, leaves: list[torch.Tensor | None]
    ) -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad((out * w).sum(), [leaves[i] for i in present])  # type: ignore[misc]

    grads_fast = grads(fast, weights.float(), inputs)
    grads_slow = grads(slow, weights, ref)
    grads_mag = grads(magnitude, weights.abs(), mag)
    # The backward recomputes the forward (gamma) and runs the recurrence in reverse (gamma).
    for i, a, b, m in zip(present, grads_fast, grads_slow, grads_mag, strict=True):
        worst = float((a.double() - b).abs().max())
        bound = 2.0 * gamma * max(float(m.abs().max()), float(b.abs().max()))
        assert worst <= bound, (i, worst / bound)


@pytest.mark.parametrize(
    ("use_d", "use_z", "use_bias", "softplus"), list(itertools.product([True, False], repeat=4))
)
def test_scan_kernel_matches_torch_with_every_optional_term(
    isa: str, use_d: bool, use_z: bool, use_bias: bool, softplus: bool
) -> None:
    u, delta, A, B, C, D, z, bias = _channels_last_inputs(0, batch=3, dim=20, state=8, length=11)
    _compare(
        [u, delta, A, B, C, D if use_d else None, z if use_z else None, bias if use_bias else None],
        softplus,
    )


@pytest.mark.parametrize(("dim", "state", "length"), [(64, 8, 40), (17, 3, 1), (33, 16, 2)])
def test_scan_kernel_shapes(isa: str, dim: int, state: int, length: int) -> None:
    _compare(_channels_last_inputs(1, batch=4, dim=dim, state=state, length=length), True)


def test_scan_kernel_clamped_decays_have_zero_gradient_as_torch(isa: str) -> None:
    # A * dt far below -40 for most entries: exp() is clamped and the gradient through it is zero.
    _compare(_channels_last_inputs(2, batch=2, dim=16, state=4, length=9, a_scale=400.0), True)


def test_scan_kernel_threads_agree(isa: str) -> None:
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
def test_causal_conv_kernel_matches_conv1d(isa: str, length: int, use_bias: bool) -> None:
    g = torch.Generator().manual_seed(length)
    xz = torch.randn(5, length, 40, generator=g)
    weight = torch.randn(20, 1, 4, generator=g)
    bias = torch.randn(20, generator=g) if use_bias else None
    x = xz[..., 20:]  # a column slice, read in place
    fast_in = [x.requires_grad_(), weight.requires_grad_(), bias]
    if bias is not None:
        bias.requires_grad_()
    ref, mag = _float64([x, weight, bias]), _float64([x, weight, bias])
    fast = causal_conv1d_cpu(*fast_in)  # type: ignore[arg-type]
    slow = causal_conv1d_torch(*ref)  # type: ignore[arg-type]
    # |pre| summed in magnitude; silu is 1.1-Lipschitz and |silu(p)| <= |p|.
    mx, mw, mb = mag
    assert mx is not None and mw is not None
    pre = F.conv1d(mx.abs().transpose(1, 2), mw.abs(), None, padding=mw.shape[-1] - 1, groups=20)
    pre = pre[..., :length].transpose(1, 2)
    magnitude = 1.1 * (pre if mb is None else pre + mb.abs())
    width, largest = weight.shape[-1], float(magnitude.detach().max())
    # The pre-activation's width + 1 roundings, then sigmoid's exp (4u, plus |p| u from its
    # argument) and three more roundings; the gradients add the sums over taps and steps.
    gamma = (width + 1 + 8 + largest) * UNIT_ROUNDOFF
    error = (fast.detach().double() - slow.detach()).abs()
    assert bool((error <= gamma * magnitude.detach() + SMALLEST_NORMAL).all())
    dout = torch.randn_like(slow)
    present = [i for i, t in enumerate(fast_in) if t is not None]
    grads_fast = torch.autograd.grad((fast * dout.float()).sum(), [fast_in[i] for i in present])
    grads_slow = torch.autograd.grad((slow * dout).sum(), [ref[i] for i in present])
    grads_mag = torch.autograd.grad((magnitude * dout.abs()).sum(), [mag[i] for i in present])
    gamma_grad = (length + width + 12 + largest) * UNIT_ROUNDOFF
    for a, b, m in zip(grads_fast, grads_slow, grads_mag, strict=True):
        worst = float((a.double() - b).abs().max())
        assert worst <= 2.0 * gamma_grad * max(float(m.abs().max()), float(b.abs().max()))
    # float64 goes to the twin.
    torch.testing.assert_close(
        causal_conv1d(x.double(), weight.double(), None),
        causal_conv1d_torch(x.double(), weight.double(), None),
    )


def test_mamba_model_float32_kernels_match_float64_twins(isa: str) -> None:
    torch.manual_seed(0)
    net = model.build(ModelConfig(arch="mamba", vocab_size=50, max_len=24)).eval()
    kinds = torch.randint(1, 50, (6, 24))
    fields = torch.randn(6, 24, 10)
    fast = net(kinds, fields)  # float32: the C++ kernels
    slow = net.double()(kinds, fields.double())  # float64: the PyTorch twins
    torch.testing.assert_close(fast.double(), slow, rtol=1e-4, atol=1e-4)


def test_forcing_a_build_switches_the_code_that_runs() -> None:
    inputs = _channels_last_inputs(4, batch=3, dim=32, state=8, length=16)
    before = kernels.active()  # the best build, or the one TCL_KERNEL_ISA forced
    outputs = {}
    for name in kernels.supported():
        with kernels.forced(name):
            assert kernels.active() == name == _core.kernel_isa()
            outputs[name] = selective_scan_cpu(*inputs, delta_softplus=True).detach()  # type: ignore[arg-type]
    if "avx2" in outputs:
        # The AVX2 build fuses a * b + c into one rounding (FMA) where SSE2 rounds twice: the
        # same function, different bits. Equal bits would mean the baseline code never ran.
        assert not torch.equal(outputs["baseline"], outputs["avx2"])
    assert kernels.active() == before  # forced() restored it


def test_unknown_or_unsupported_build_is_refused() -> None:
    before = kernels.active()
    with pytest.raises(TclError, match="'sse9' is unknown"):
        kernels.select("sse9")
    for name in set(kernels.ISAS) - set(kernels.supported()):
        with pytest.raises(TclError, match="needs instructions this CPU lacks"):
            kernels.select(name)
    assert kernels.active() == before


@pytest.mark.parametrize("forced", ["baseline", "auto", "sse9"])
def test_environment_variable_forces_the_build_at_import(forced: str) -> None:
    code = "from tcl.model import kernels; print(kernels.active())"
    env = {**os.environ, "TCL_KERNEL_ISA": forced}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if forced == "sse9":
        assert run.returncode != 0
        assert "TCL_KERNEL_ISA: kernel build 'sse9' is unknown" in run.stderr
    else:
        assert run.returncode == 0, run.stderr
        expected = "baseline" if forced == "baseline" else kernels.supported()[-1]
        assert run.stdout.strip() == expected
