"""Every zoo network imports through torch.export -> relax -> MetaSchedule tasks, and computes
an output that depends on its input."""

from __future__ import annotations

import pytest
import torch

from tcl import zoo
from tcl.cli import main


def test_registry() -> None:
    assert set(zoo.HELD_OUT) == {"resnet50", "mobilenet_v2", "resnext50", "bert_tiny", "bert_base"}
    assert len(zoo.TRAINING) >= 8
    with pytest.raises(KeyError, match="the zoo has"):
        zoo.get("alexnet")


@pytest.fixture(scope="module")
def target() -> object:
    pytest.importorskip("tvm")
    from tcl.tuning import platforms

    return platforms.get("cpu-avx2-1t").tvm_target()


@pytest.mark.tvm
@pytest.mark.parametrize("name", zoo.names())
def test_network_imports_to_tasks(name: str, target: object) -> None:
    network = zoo.get(name)
    tasks = zoo.extract(name, target, tiny=network.tiny_input_shape is not None)
    assert tasks, f"{name} gave no tasks"
    assert all(t.flops > 0 and t.weight >= 1 for t in tasks)
    assert len({t.name for t in tasks}) == len(tasks)
    assert any(k in t.name for t in tasks for k in ("conv", "matmul", "dense"))


@pytest.mark.tvm
@pytest.mark.parametrize(
    ("name", "operator"),
    [
        ("llama_block", "rsqrt"),  # RMSNorm
        ("t5_encoder", "gelu_tanh"),  # gated-GELU feed-forward
        ("efficientnet_b0", "sigmoid"),  # SiLU and the squeeze-excite gate
        ("conformer", "conv1d"),
    ],
)
def test_recent_operator_families_reach_tasks(name: str, operator: str, target: object) -> None:
    # The networks added for today's operator families must give tasks of those operators,
    # not be fused or decomposed away before MetaSchedule sees them.
    tasks = zoo.extract(name, target, tiny=True)
    assert any(operator in t.name for t in tasks), sorted(t.name for t in tasks)


@pytest.mark.parametrize(
    ("name", "tiny"), [(name, True) for name in zoo.names()] + [("mobilenet_v2", False)]
)
def test_output_depends_on_input(name: str, tiny: bool) -> None:
    # A build is checked against PyTorch's output: an output that is the same for every input
    # (activations vanished through the depth) would pass a wrong build.
    network = zoo.get(name)
    torch.manual_seed(0)
    x, y = (zoo.example_input(network, tiny=tiny) for _ in range(2))
    net = zoo.module(network, x)
    with torch.no_grad():
        a, b = (out[0] if isinstance(out, tuple) else out for out in (net(x), net(y)))
    scale = float(a.abs().max())
    assert torch.isfinite(a).all() and 1e-3 < scale < 1e3, f"{name}: output scale {scale:.3g}"
    assert float((a - b).abs().max()) > 1e-2 * scale, f"{name}: the same output for two inputs"


@pytest.mark.tvm
def test_batch_size_and_full_shape(target: object) -> None:
    one = zoo.extract("resnet18", target)
    two = zoo.extract("resnet18", target, batch=2)
    flops = sum(t.weight * t.flops for t in one)
    assert 3.4e9 < flops < 3.9e9  # ResNet-18 at 224x224: 3.6 GFLOP with fused epilogues
    assert sum(t.weight * t.flops for t in two) == pytest.approx(2 * flops, rel=0.01)


def test_cli_zoo_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "held-out" in out and "gpt2_block" in out
