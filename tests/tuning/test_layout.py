"""Convolutions tuned and built in another data layout compute what the network computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcl.tuning import platforms
from tcl.tuning.layout import check_conv_layout, with_conv_layout
from tcl.tuning.options import TuneOptions

pytestmark = pytest.mark.tvm


def small_cnn() -> tuple[object, object]:
    """Two convolutions (one grouped) with batch norm between them, then a layout-bound
    flatten: the layout must change back before it."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 6 * 6, 10),
    ).eval()
    with torch.no_grad():  # batch norm statistics other than the identity's
        net[1].running_mean.uniform_(-0.5, 0.5)
        net[1].running_var.uniform_(0.5, 2.0)
    return net, torch.randn(1, 8, 6, 6)


def test_an_unknown_layout_is_refused() -> None:
    check_conv_layout(None)
    check_conv_layout("NHWC")
    with pytest.raises(ValueError, match="unknown convolution layout 'NCHW8c'"):
        check_conv_layout("NCHW8c")
    with pytest.raises(ValueError, match="unknown convolution layout"):
        TuneOptions(conv_layout="nhwc")


def test_nhwc_convolutions_read_channels_last_and_no_weight_is_transformed_at_run_time() -> None:
    from tcl.zoo.extract import extracted_tasks, import_network

    net, x = small_cnn()
    mod = import_network(net, (x,))
    assert with_conv_layout(mod, None) is mod
    nhwc = with_conv_layout(mod, "NHWC")
    main = str(nhwc["main"])
    # the input's transform and the one back before the flatten; the weights' were folded
    assert main.count("R.layout_transform(") + main.count("R.permute_dims(") == 2
    assert "R.nn.conv2d" in main and 'data_layout="NHWC"' in main
    target = platforms.get("cpu-x86-64-1t").tvm_target()
    convs = [
        t.dispatched[0].script() for t in extracted_tasks(nhwc, target) if "conv2d" in t.task_name
    ]
    assert len(convs) == 2
    # channels last: the input of the first convolution is (1, 6, 6, 8), padded (1, 8, 8, 8)
    assert any("T.int64(6), T.int64(6), T.int64(8)" in script for script in convs)


def test_a_network_tuned_in_nhwc_computes_what_pytorch_computes(tmp_path: Path) -> None:
    import torch

    import tcl

    net, x = small_cnn()
    report = tcl.tune(
        net,
        (x,),
        platform=platforms.get("cpu-x86-64-1t"),
        trials=12,
        work_dir=tmp_path / "work",
        name="cnn",
        cost_model="random",
        conv_layout="NHWC",
        rounds=2,
        progress=False,
    )
    assert report.settings.conv_layout == "NHWC"
    assert "convolutions in NHWC" in report.lines()[0]
    with torch.no_grad():
        expected = net(x).numpy()
    # float32 sums of 72 and 9 products taken in another order, and batch norm folded
    assert report.max_abs_error < 1e-4 * max(1.0, float(np.abs(expected).max()))
