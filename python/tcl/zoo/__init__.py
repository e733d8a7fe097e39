"""The network zoo: real networks in plain PyTorch, imported into TVM as tuning tasks.

>>> from tcl import zoo
>>> zoo.names()                      # every network; zoo.HELD_OUT are never trained on
>>> tasks = zoo.extract("resnet18", target)   # torch.export -> relax -> MetaSchedule tasks
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tcl.zoo.extract import Task


@dataclass(frozen=True)
class Network:
    """A zoo entry: a factory and the shape of its input.

    ``input_shape`` is for batch 1; the batch size is a separate argument of
    :func:`extract_tasks`. ``input_dtype`` is "float32" (images) or "int64" (token ids).
    """

    name: str
    factory: Callable[[], object]
    input_shape: tuple[int, ...]
    input_dtype: str = "float32"
    held_out: bool = False
    tiny_input_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class _Cnn:
    """The factory of a convolutional network (:mod:`tcl.zoo.cnn`, :mod:`tcl.zoo.cnn_recent`):
    :func:`module` scales its weights for the input."""

    name: str
    module: str = "cnn"

    def __call__(self) -> object:
        return getattr(importlib.import_module(f"tcl.zoo.{self.module}"), self.name)()


def _transformer(name: str, module: str = "transformers") -> Callable[[], object]:
    def build() -> object:
        return getattr(importlib.import_module(f"tcl.zoo.{module}"), name)()

    return build


IMAGE = (1, 3, 224, 224)
TINY_IMAGE = (1, 3, 32, 32)
TOKENS = (1, 128)
TINY_TOKENS = (1, 8)

NETWORKS: dict[str, Network] = {
    n.name: n
    for n in [
        # Held out from training, as in TLP/TCL.
        Network("resnet50", _Cnn("resnet50"), IMAGE, held_out=True, tiny_input_shape=TINY_IMAGE),
        Network(
            "mobilenet_v2", _Cnn("mobilenet_v2"), IMAGE, held_out=True, tiny_input_shape=TINY_IMAGE
        ),
        Network("resnext50", _Cnn("resnext50"), IMAGE, held_out=True, tiny_input_shape=TINY_IMAGE),
        Network("bert_tiny", _transformer("bert_tiny"), TOKENS, "int64", True, TINY_TOKENS),
        Network("bert_base", _transformer("bert_base"), TOKENS, "int64", True, TINY_TOKENS),
        # Training networks.
        Network("resnet18", _Cnn("resnet18"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network("resnet34", _Cnn("resnet34"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network("vgg11", _Cnn("vgg11"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network("vgg16", _Cnn("vgg16"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network("densenet121", _Cnn("densenet121"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network(
            "mobilenet_v3_small", _Cnn("mobilenet_v3_small"), IMAGE, tiny_input_shape=TINY_IMAGE
        ),
        Network("squeezenet", _Cnn("squeezenet"), IMAGE, tiny_input_shape=(1, 3, 64, 64)),
        Network("dcgan", _Cnn("dcgan_generator"), (1, 100), tiny_input_shape=(1, 100)),
        Network("vit_tiny", _transformer("vit_tiny"), IMAGE, tiny_input_shape=None),
        Network("gpt2_block", _transformer("gpt2_block"), TOKENS, "int64", False, TINY_TOKENS),
        Network("mlp_mixer", _transformer("mlp_mixer"), IMAGE, tiny_input_shape=None),
        # Training networks of today's operator families (large-kernel depthwise, grouped and
        # dilated convolutions, pooling and upsampling, RMSNorm, rotary embeddings, grouped- and
        # multi-query attention, gated feed-forward layers, 1-D convolutions).
        Network(
            "convnext_atto", _Cnn("convnext_atto", "cnn_recent"), IMAGE, tiny_input_shape=TINY_IMAGE
        ),
        Network(
            "efficientnet_b0",
            _Cnn("efficientnet_b0", "cnn_recent"),
            IMAGE,
            tiny_input_shape=TINY_IMAGE,
        ),
        Network(
            "regnetx_400mf", _Cnn("regnetx_400mf", "cnn_recent"), IMAGE, tiny_input_shape=TINY_IMAGE
        ),
        Network(
            "shufflenet_v2", _Cnn("shufflenet_v2", "cnn_recent"), IMAGE, tiny_input_shape=TINY_IMAGE
        ),
        Network("unet", _Cnn("unet", "cnn_recent"), (1, 3, 256, 256), tiny_input_shape=TINY_IMAGE),
        Network("deeplab_v3", _Cnn("deeplab_v3", "cnn_recent"), IMAGE, tiny_input_shape=TINY_IMAGE),
        Network(
            "llama_block", _transformer("llama_block", "llm"), TOKENS, "int64", False, TINY_TOKENS
        ),
        Network(
            "falcon_block", _transformer("falcon_block", "llm"), TOKENS, "int64", False, TINY_TOKENS
        ),
        Network(
            "t5_encoder", _transformer("t5_encoder", "llm"), TOKENS, "int64", False, TINY_TOKENS
        ),
        Network("conformer", _transformer("conformer"), (1, 80, 400), tiny_input_shape=(1, 80, 32)),
        # Training networks of small transformers: dense layers 40 to 1,024 wide.
        Network(
            "electra_small", _transformer("electra_small"), TOKENS, "int64", False, TINY_TOKENS
        ),
        Network("kwt", _transformer("kwt"), (1, 40, 98), tiny_input_shape=(1, 40, 16)),
    ]
}
HELD_OUT = tuple(n for n, net in NETWORKS.items() if net.held_out)
TRAINING = tuple(n for n, net in NETWORKS.items() if not net.held_out)


def names() -> list[str]:
    return list(NETWORKS)


def get(name: str) -> Network:
    try:
        return NETWORKS[name]
    except KeyError:
        raise KeyError(f"unknown network {name!r}; the zoo has: {', '.join(NETWORKS)}") from None


__all__ = [
    "HELD_OUT",
    "NETWORKS",
    "TRAINING",
    "Network",
    "Task",
    "example_input",
    "extract",
    "get",
    "module",
    "names",
]


def example_input(
    network: Network,
    *,
    batch: int = 1,
    input_shape: tuple[int, ...] | None = None,
    tiny: bool = False,
) -> object:
    """A random input for ``network``: its own shape (or ``input_shape``, or the small test
    shape when ``tiny``), with the first dimension set to ``batch``."""
    import torch

    shape = input_shape or (
        network.tiny_input_shape if tiny and network.tiny_input_shape else network.input_shape
    )
    shape = (batch, *shape[1:])
    if network.input_dtype == "int64":
        return torch.randint(0, 1000, shape, dtype=torch.int64)
    return torch.randn(shape)


def module(network: Network, example: Any) -> object:
    """``network`` in eval mode, for inputs shaped like ``example``. A convolutional network's
    weights are scaled for that shape (:func:`tcl.zoo.cnn.scaled`) so that its output depends
    on its input; the tensor programs are the same either way (extraction skips this)."""
    net = network.factory()
    if isinstance(network.factory, _Cnn):
        from tcl.zoo import cnn

        return cnn.scaled(net, tuple(example.shape))  # type: ignore[arg-type]
    return net.eval()  # type: ignore[attr-defined]


def extract(
    name: str,
    target: object,
    *,
    batch: int = 1,
    input_shape: tuple[int, ...] | None = None,
    tiny: bool = False,
    include_zero_flop: bool = False,
    conv_layout: str | None = None,
) -> list[Task]:
    """Tuning tasks of zoo network ``name`` for ``target`` (a tvm.target.Target), its 2-D
    convolutions in ``conv_layout`` (:mod:`tcl.tuning.layout`; None: NCHW, as imported)."""
    from tcl.tuning.layout import with_conv_layout
    from tcl.zoo.extract import import_network, tasks_of

    network = get(name)
    mod = import_network(
        network.factory(), example_input(network, batch=batch, input_shape=input_shape, tiny=tiny)
    )
    return tasks_of(with_conv_layout(mod, conv_layout), target, include_zero_flop=include_zero_flop)
