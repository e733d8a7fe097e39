"""The Mamba block's causal depthwise convolution with its SiLU, channels-last.

:func:`causal_conv1d_torch` is Conv1d + SiLU: the reference, and the path for CUDA or non-float32
tensors. :func:`causal_conv1d_cpu` runs the fused C++ kernel of ``tcl._core`` (cpp/causal_conv.h)
forward and backward; :func:`causal_conv1d` picks between them.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from tcl import _core
from tcl.model.scan import as_array, rows


def causal_conv1d_torch(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """silu(causal depthwise conv(x)); x (batch, length, dim), weight (dim, 1, width)."""
    length, width = x.shape[1], weight.shape[-1]
    out = F.conv1d(x.transpose(1, 2), weight, bias, padding=width - 1, groups=x.shape[2])
    return F.silu(out[..., :length]).transpose(1, 2)


class _CoreConv(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight_t: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight_t, bias)
        out = _core.causal_conv_forward(
            as_array(x), as_array(weight_t), as_array(bias), torch.get_num_threads()
        )
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight_t, bias = ctx.saved_tensors
        dx, dweight, dbias = _core.causal_conv_backward(
            as_array(x),
            as_array(weight_t),
            as_array(bias),
            dout.contiguous().numpy(),
            torch.get_num_threads(),
        )
        return (
            torch.from_numpy(dx),
            torch.from_numpy(dweight),
            None if dbias is None else torch.from_numpy(dbias),
        )


def causal_conv1d_cpu(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """:func:`causal_conv1d_torch` in the fused C++ kernel (float32, CPU); x may be a column
    slice of a wider tensor."""
    weight_t = weight[:, 0, :].t().contiguous()  # (width, dim)
    out: torch.Tensor = _CoreConv.apply(rows(x), weight_t, bias)  # type: ignore[no-untyped-call]
    return out


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    tensors = [t for t in (x, weight, bias) if t is not None]
    if all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors):
        return causal_conv1d_cpu(x, weight, bias)
    return causal_conv1d_torch(x, weight, bias)
