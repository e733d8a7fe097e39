"""Group and instance normalization (tcl.integrations.tvm.norms) compute what PyTorch computes,
also where the mean is large against the spread."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import imported_output

GENERATOR = torch.Generator().manual_seed(5)
IMAGES = torch.randn(2, 8, 5, 6, generator=GENERATOR)
WEIGHT, BIAS = torch.randn(8, generator=GENERATOR), torch.randn(8, generator=GENERATOR)
NORMS = {
    "nn.GroupNorm": lambda x: F.group_norm(x, 4, WEIGHT, BIAS),
    "F.group_norm without weights": lambda x: F.group_norm(x, 2),
    "group norm of sequences": lambda x: F.group_norm(x.flatten(2), 4, WEIGHT),
    "group norm, one group a channel": lambda x: F.group_norm(x, 8, None, BIAS),
    "nn.InstanceNorm2d": lambda x: F.instance_norm(x, weight=WEIGHT, bias=BIAS),
    "instance norm without weights": lambda x: F.instance_norm(x),
    "instance norm of sequences": lambda x: F.instance_norm(x.flatten(2), weight=WEIGHT),
    "instance norm of volumes": lambda x: F.instance_norm(x.view(2, 8, 5, 3, 2)),
    "batch norm with the batch's statistics": lambda x: F.batch_norm(
        x, None, None, WEIGHT, BIAS, training=True
    ),
}


@pytest.mark.parametrize("offset", [0.0, 300.0])
@pytest.mark.parametrize("name", list(NORMS))
def test_normalization_as_in_pytorch(name: str, offset: float) -> None:
    # 300 standard deviations from zero: TVM's one-pass variance came out 0.06 off (outputs ~3).
    # Subtracting the mean first leaves float32's rounding of the inputs (ulp(300) = 3e-5) and of
    # sums of 30-240 of them, a few 1e-5 of outputs scaled by weights up to ~2.
    f, x = NORMS[name], IMAGES + offset
    np.testing.assert_allclose(imported_output(f, x), f(x).numpy(), rtol=0, atol=5e-4)
