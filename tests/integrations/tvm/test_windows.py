"""Sliding windows (F.unfold, F.fold, Tensor.unfold) and antialiased resampling compute what
PyTorch computes (TVM 0.27 fails on the first three and treats antialiasing as absent)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

IMAGE = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
COLUMNS = torch.randn(2, 12, 32, generator=torch.Generator().manual_seed(1))

from conftest import imported_output  # noqa: E402

WINDOWS = {
    "F.unfold 3x3, padded, stride 2": (lambda x: F.unfold(x, 3, padding=1, stride=2), IMAGE),
    "F.unfold of an unbatched image, dilated": (
        lambda x: F.unfold(x[0], (3, 2), dilation=(2, 1), padding=(1, 0), stride=(1, 3)),
        IMAGE,
    ),
    "F.fold of patches": (lambda x: F.fold(F.unfold(x, 2, stride=2), (16, 16), 2, stride=2), IMAGE),
    "F.fold, overlapping windows": (
        lambda c: F.fold(c, (7, 8), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
        COLUMNS,
    ),
    "Tensor.unfold, windows apart": (lambda x: x.unfold(2, 4, 4), IMAGE),
    "Tensor.unfold, overlapping windows": (lambda x: x.unfold(1, 2, 1), IMAGE),
}


@pytest.mark.parametrize("name", list(WINDOWS))
def test_windows_hold_the_elements_pytorch_puts_there(name: str) -> None:
    f, x = WINDOWS[name]
    # F.fold adds overlapping windows in another order than PyTorch: float32 rounding apart
    np.testing.assert_allclose(imported_output(f, x), f(x).numpy(), rtol=1e-6, atol=1e-6)


RESAMPLING = {
    "bilinear, halved": lambda x: F.interpolate(
        x, scale_factor=0.5, mode="bilinear", antialias=True
    ),
    "bilinear, scale 0.3": lambda x: F.interpolate(
        x, scale_factor=0.3, mode="bilinear", antialias=True
    ),
    "bicubic, to 7 x 9": lambda x: F.interpolate(x, size=(7, 9), mode="bicubic", antialias=True),
    "bilinear, corners aligned, up and down": lambda x: F.interpolate(
        x, size=(23, 9), mode="bilinear", antialias=True, align_corners=True
    ),
    # PyTorch maps back by 1 / scale, TVM by the sizes' ratio: 16 * 1.7 is not whole
    "bilinear, scale 1.7": lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"),
    "bilinear, twice (TVM's own)": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "bicubic, scale 0.45": lambda x: F.interpolate(x, scale_factor=0.45, mode="bicubic"),
    # TVM cannot compile the decomposition of these two
    "linear, one-dimensional": lambda x: F.interpolate(x[:, :, 0], size=13, mode="linear"),
    "linear, scale 1.35, corners aligned": lambda x: F.interpolate(
        x[:, :, 0], scale_factor=1.35, mode="linear", align_corners=True
    ),
    "trilinear": lambda x: F.interpolate(
        x.view(1, 2, 3, 16, 16), scale_factor=(1.5, 0.7, 1.3), mode="trilinear"
    ),
}


@pytest.mark.parametrize("name", list(RESAMPLING))
def test_resampling_weighs_pixels_as_pytorch(name: str) -> None:
    f = RESAMPLING[name]
    # sums of up to ~16 float32 products per axis, in another order: ~1e-6 of pixels of ~4
    np.testing.assert_allclose(imported_output(f, IMAGE), f(IMAGE).numpy(), rtol=1e-5, atol=1e-5)


GRID = torch.rand(2, 5, 7, 2, generator=torch.Generator().manual_seed(2)) * 3 - 1.5
SAMPLING = {
    "bilinear, zeros outside": lambda x, g: F.grid_sample(x, g, align_corners=False),
    "nearest, border": lambda x, g: F.grid_sample(
        x, g, mode="nearest", padding_mode="border", align_corners=True
    ),
    "bicubic, reflection": lambda x, g: F.grid_sample(
        x, g, mode="bicubic", padding_mode="reflection", align_corners=False
    ),
}


@pytest.mark.parametrize("name", list(SAMPLING))
def test_grid_sample_reads_the_grid_as_pytorch_lays_it_out(name: str) -> None:
    # TVM's converter handed its kernel PyTorch's (N, H, W, 2) grid as (N, 2, H, W): a wrong shape
    f = SAMPLING[name]
    expected = f(IMAGE, GRID).numpy()
    np.testing.assert_allclose(imported_output(f, IMAGE, GRID), expected, rtol=1e-5, atol=1e-5)


POOLING_INDICES = {
    "2x2": lambda x: F.max_pool2d(x, 2, return_indices=True)[1],
    "3x3, stride 2, padded, ceil mode": lambda x: F.max_pool2d(
        x[:, :, :7], 3, 2, 1, ceil_mode=True, return_indices=True
    )[1],
    "dilated, unbatched": lambda x: F.max_pool2d(x[0], 2, 1, dilation=2, return_indices=True)[1],
    "equal maxima: the first": lambda x: F.max_pool2d(x.round(), 2, return_indices=True)[1],
    "max_unpool2d after it": lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
}


@pytest.mark.parametrize("name", list(POOLING_INDICES))
def test_max_pooling_indices_are_pytorchs(name: str) -> None:
    # TVM's converter gave zeros for the indices
    f = POOLING_INDICES[name]
    np.testing.assert_array_equal(imported_output(f, IMAGE), f(IMAGE).numpy())


@pytest.mark.parametrize(
    "f", [lambda x: F.max_pool3d(x, 2), lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True)]
)
def test_max_pool3d_without_a_stride(f) -> None:
    # torch.export writes an empty stride, on which TVM's converter failed
    x = IMAGE.view(1, 2, 3, 16, 16)
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())
