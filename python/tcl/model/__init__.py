"""Cost models over schedule tokens, and their checkpoints.

A checkpoint holds the weights, the :class:`ModelConfig`, the tokenizer settings and the
vocabulary the model was trained with, and a format version; :func:`load` checks all of them.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tcl.errors import FormatVersionError
from tcl.model.common import ForPlatform, ModelConfig
from tcl.tokenizer import TokenizerConfig, Vocab

CHECKPOINT_FORMAT_VERSION = 1


def base_model_path() -> Path:
    """The pretrained base model shipped in the package (scripts/train_base_model.py made it
    from the committed dataset; the held-out networks were not trained on)."""
    path = Path(str(resources.files("tcl") / "data" / "base_model.pt"))
    if not path.exists():
        raise FileNotFoundError(
            f"the base model {path} is missing from this install; "
            "run scripts/train_base_model.py or pass a checkpoint"
        )
    return path


def build(config: ModelConfig) -> nn.Module:
    if config.arch == "mamba":
        from tcl.model.mamba import MambaCostModel

        return MambaCostModel(config)
    if config.arch == "attention":
        from tcl.model.baselines import AttentionCostModel

        return AttentionCostModel(config)
    if config.arch == "lstm":
        from tcl.model.baselines import LSTMCostModel

        return LSTMCostModel(config)
    raise ValueError(f"unknown model architecture {config.arch!r} (mamba, attention, lstm)")


def with_platform_input(model: nn.Module, features: int) -> nn.Module:
    """A copy of ``model`` that also reads a platform descriptor of width ``features``. The new
    input starts with zero weights, so the copy scores exactly as ``model`` does until trained."""
    config: ModelConfig = model.config  # type: ignore[assignment]
    if config.platform_features == features:
        return copy.deepcopy(model)
    if config.platform_features:
        raise ValueError(
            f"the model reads {config.platform_features} platform features, not {features}"
        )
    out = build(replace(config, platform_features=features))
    missing, unexpected = out.load_state_dict(model.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("encoder.platform.") for k in missing), missing
    layer: nn.Linear = out.encoder.platform  # type: ignore[assignment,union-attr]
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    out.train(model.training)
    return out


def num_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def parameter_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def save(
    path: str | Path,
    model: nn.Module,
    vocab: Vocab,
    tokenizer: TokenizerConfig,
    extra: dict[str, Any] | None = None,
) -> None:
    config: ModelConfig = model.config  # type: ignore[assignment]
    torch.save(
        {
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "config": config.to_dict(),
            "vocab": vocab.freeze().to_dict(),
            "tokenizer": tokenizer.to_dict(),
            "state_dict": model.state_dict(),
            "extra": extra or {},
        },
        path,
    )


def load(path: str | Path) -> tuple[nn.Module, Vocab, TokenizerConfig, dict[str, Any]]:
    """(model in eval mode, frozen vocabulary, tokenizer settings, extra) of a checkpoint."""
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    version = ckpt.get("format_version") if isinstance(ckpt, dict) else None
    if version != CHECKPOINT_FORMAT_VERSION:
        raise FormatVersionError(
            f"{path}: checkpoint format {version!r}; this tcl reads {CHECKPOINT_FORMAT_VERSION}"
        )
    config = ModelConfig.from_dict(ckpt["config"])
    vocab = Vocab.from_dict(ckpt["vocab"])
    tokenizer = TokenizerConfig.from_dict(ckpt["tokenizer"])
    if len(vocab) != config.vocab_size or tokenizer.num_fields != config.num_fields:
        raise FormatVersionError(f"{path}: vocabulary or tokenizer does not match the model config")
    model = build(config)
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    return model, vocab, tokenizer, dict(ckpt.get("extra", {}))


__all__ = [
    "ForPlatform",
    "ModelConfig",
    "build",
    "load",
    "num_parameters",
    "parameter_bytes",
    "save",
    "with_platform_input",
]
