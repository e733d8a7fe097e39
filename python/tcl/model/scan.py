"""The selective scan (Mamba's S6 recurrence) in pure PyTorch: the CPU path and the reference.

For each channel d and state n, with inputs discretized by a per-step ``delta``::

    h[t] = exp(delta[t] * A) * h[t-1] + delta[t] * B[t] * u[t]
    y[t] = <C[t], h[t]> + D * u[t]          (then * silu(z[t]) when z is given)

Schedules are short (tens of steps), so the loop runs over time only; every step is one
whole-tensor update of all batches, channels and states. ``selective_scan_literal`` transcribes
the equations scalar by scalar: the twin the tests check this against.

:func:`selective_scan` picks the fast path: ``mamba_ssm``'s fused CUDA kernel for CUDA tensors
(where it imports), the C++ kernel of ``tcl._core`` for float32 CPU tensors, else this module's
PyTorch scan, which is the twin of both.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from tcl import _core

_BATCH_CHUNK = 128


def _fused_kernel() -> object | None:
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except Exception:  # ImportError, or a CUDA extension that fails to load
        return None
    return selective_scan_fn


def _scan_states(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor
) -> torch.Tensor:
    """The states h[t] (batch, length, dim, state) of h[t] = exp(delta A) h[t-1] + delta B u."""
    # Whole-sequence tensors first (one vectorized exp), then only the recurrence is sequential.
    # exp(x) for x < -87 is a float32 denormal, and denormal arithmetic runs ~50x slower on
    # x86 (measured: 6x slower training steps). exp(-40) = 4e-18 is already 0 next to the
    # drive term, so the cut changes no result at float32 precision.
    log_decay = (delta.transpose(1, 2)[..., None] * A).clamp(min=-40.0)
    decay = torch.exp(log_decay)  # (batch, length, dim, state)
    drive = (delta * u).transpose(1, 2)[..., None] * B.transpose(1, 2)[:, :, None, :]
    h = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    hs = []
    # unbind, not decay[:, t]: the backward of one unbind is one stack, while the backward of
    # each slice would write a full-size gradient (quadratic in the length).
    for decay_t, drive_t in zip(decay.unbind(1), drive.unbind(1), strict=True):
        h = decay_t * h + drive_t
        hs.append(h)
    return torch.stack(hs, dim=1)


def selective_scan_torch(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """Selective scan with ``mamba_ssm.selective_scan_fn``'s signature and layout.

    Parameters
    ----------
    u, delta : (batch, dim, length)
    A : (dim, state)
    B, C : (batch, state, length)
    D : (dim,), optional
    z : (batch, dim, length), optional
    delta_bias : (dim,), optional

    Returns
    -------
    y : (batch, dim, length), dtype of ``u``
    """
    if u.shape[0] > _BATCH_CHUNK:
        # Big (batch, length, dim, state) temporaries exceed glibc's mmap threshold and are
        # page-faulted in afresh on every call; chunks of the batch reuse warm heap memory
        # (measured: 3.4x faster inference at batch 2048).
        parts = []
        for i in range(0, u.shape[0], _BATCH_CHUNK):
            b = slice(i, i + _BATCH_CHUNK)
            zb = None if z is None else z[b]
            parts.append(
                selective_scan_torch(
                    u[b], delta[b], A, B[b], C[b], D, zb, delta_bias, delta_softplus
                )
            )
        return torch.cat(parts)
    dtype = u.dtype
    compute = torch.promote_types(dtype, torch.float32)  # half inputs scan in fp32, as mamba_ssm
    u, delta = u.to(compute), delta.to(compute)
    if delta_bias is not None:
        delta = delta + delta_bias[..., None].to(compute)
    if delta_softplus:
        delta = F.softplus(delta)
    A, B, C = A.to(compute), B.to(compute), C.to(compute)
    hs = _scan_states(u, delta, A, B)
    # y[t] = <C[t], h[t]> for all t at once.
    y = torch.einsum("bldn,bln->bdl", hs, C.transpose(1, 2))
    if D is not None:
        y = y + u * D[:, None].to(compute)
    if z is not None:
        y = y * F.silu(z.to(compute))
    return y.to(dtype)


def rows(x: torch.Tensor) -> torch.Tensor:
    """x (batch, length, width) as the C++ kernels read it: contiguous channels, evenly spaced
    rows (a column slice of a contiguous tensor qualifies). Strides of size-1 axes do not count,
    as in cpp/bindings.cc."""
    batch, length, width = x.shape
    channels = width <= 1 or x.stride(2) == 1
    even = batch <= 1 or length <= 1 or x.stride(0) == length * x.stride(1)
    return x if channels and even else x.contiguous()


def as_array(x: torch.Tensor | None) -> Any:
    """A numpy view for the C++ kernels (no copy), None stays None."""
    return None if x is None else x.detach().numpy()


class _CoreScan(torch.autograd.Function):
    """The fused C++ forward and backward (channels-last operands, see cpp/scan.h)."""

    @staticmethod
    def forward(ctx: Any, softplus: bool, *operands: torch.Tensor | None) -> torch.Tensor:
        ctx.softplus = softplus
        ctx.save_for_backward(*operands)
        u, delta, A_t, B, C, D, z, bias = (as_array(x) for x in operands)
        y = _core.selective_scan_forward(
            u, delta, A_t, B, C, D, z, bias, softplus, torch.get_num_threads()
        )
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        u, delta, A_t, B, C, D, z, bias = (as_array(x) for x in ctx.saved_tensors)
        grads = _core.selective_scan_backward(
            u,
            delta,
            A_t,
            B,
            C,
            D,
            z,
            bias,
            ctx.softplus,
            dout.contiguous().numpy(),
            torch.get_num_threads(),
        )
        return (None, *(None if g is None else torch.from_numpy(g) for g in grads))


def selective_scan_cpu(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """:func:`selective_scan_torch` fused in the C++ kernel (float32, CPU), forward and backward.

    Same signature and layout. Operands that are transposed channels-last tensors, or column
    slices of one (as the cost model's projections produce them), are read in place.
    """
    y = _CoreScan.apply(  # type: ignore[no-untyped-call]
        delta_softplus,
        rows(u.transpose(1, 2)),
        rows(delta.transpose(1, 2)),
        A.t().contiguous(),
        rows(B.transpose(1, 2)),
        rows(C.transpose(1, 2)),
        None if D is None else D.contiguous(),
        None if z is None else rows(z.transpose(1, 2)),
        None if delta_bias is None else delta_bias.contiguous(),
    )
    return y.transpose(1, 2)


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """The fused CUDA kernel of ``mamba_ssm`` for CUDA tensors where it imports, the C++ kernel
    for float32 CPU tensors, else :func:`selective_scan_torch`."""
    args = (u, delta, A, B, C, D, z, delta_bias, delta_softplus)
    if u.is_cuda:
        kernel = _fused_kernel()
        if kernel is not None:
            return kernel(*args)  # type: ignore[operator]
    tensors = [t for t in args if isinstance(t, torch.Tensor)]
    if all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors):
        return selective_scan_cpu(*args)
    return selective_scan_torch(*args)


def selective_scan_literal(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """The recurrence written out one batch, channel, state and step at a time (slow; tests)."""
    batch, dim, length = u.shape
    state = A.shape[1]
    out = []
    for b in range(batch):
        rows = []
        for d in range(dim):
            h = [u.new_zeros(()) for _ in range(state)]
            ys = []
            for t in range(length):
                dt = delta[b, d, t] + (delta_bias[d] if delta_bias is not None else 0.0)
                if delta_softplus:
                    dt = torch.log1p(torch.exp(dt))
                y = u.new_zeros(())
                for n in range(state):
                    h[n] = torch.exp(dt * A[d, n]) * h[n] + dt * B[b, n, t] * u[b, d, t]
                    y = y + C[b, n, t] * h[n]
                if D is not None:
                    y = y + D[d] * u[b, d, t]
                if z is not None:
                    y = y * z[b, d, t] * torch.sigmoid(z[b, d, t])
                ys.append(y)
            rows.append(torch.stack(ys))
        out.append(torch.stack(rows))
    return torch.stack(out)
