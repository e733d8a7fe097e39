"""Cost models over schedule tokens, and their checkpoints.

A checkpoint holds the weights, the :class:`ModelConfig`, the tokenizer settings and the
vocabulary the model was trained with, a format version and a SHA-256 of the weights; :func:`load`
checks all of them, and every problem is one :class:`~tcl.errors.CheckpointError` line naming the
file (a torch-pickle is read with ``weights_only=True``: no code in it runs).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tcl.errors import CheckpointError, FormatVersionError
from tcl.model.common import ARCHS, ForPlatform, ModelConfig
from tcl.packaged import layout_file, packaged_file
from tcl.records.tokenizer import TokenizerConfig, Vocab

CHECKPOINT_FORMAT_VERSION = 2  # 2 adds "checksum"; version 1 files (without one) still load


BASE_MODELS = {"cpu": "base_model.pt", "cuda": "base_model_cuda.pt"}
# Convolutions tuned in a blocked layout (tcl tune --conv-layout) get a model of their own: the
# base model, which learnt NCHW programs, ranks NCHW16c ones little better than random picks or
# worse (docs/cost-models.md: The packaged model for blocked convolutions).
LAYOUT_MODELS = {("cpu", "NCHW16c"): "base_model_nchw16c.pt"}


def base_model_path(device: str = "cpu", conv_layout: str | None = None) -> Path:
    """The pretrained base model shipped in the package for programs that run on ``device``:
    ``"cpu"`` (scripts/train_base_model.py made it from the committed CPU dataset; the held-out
    networks were not trained on) or ``"cuda"`` (that model moved to NVIDIA GPUs by ``tcl
    distill`` from the committed CUDA records: unmoved, it ranks GPU programs worse than random
    picks, bench/README.md). With ``conv_layout``, the model for a run that tunes its
    convolutions in that layout where the package has one (:data:`LAYOUT_MODELS`: the CPU
    model moved by ``tcl distill`` to search-drawn NCHW16c programs), else ``device``'s."""
    remedy = "run scripts/train_base_model.py or pass a checkpoint"
    layout_model = layout_file(LAYOUT_MODELS, device, conv_layout, "base model", remedy)
    return layout_model or packaged_file(BASE_MODELS, device, "base model", remedy)


def build(config: ModelConfig) -> nn.Module:
    if config.members > 1:
        from tcl.model.ensemble import Ensemble

        return Ensemble(config)
    if config.arch == "mamba":
        from tcl.model.mamba import MambaCostModel

        return MambaCostModel(config)
    if config.arch == "attention":
        from tcl.model.baselines import AttentionCostModel

        return AttentionCostModel(config)
    if config.arch == "lstm":
        from tcl.model.baselines import LSTMCostModel

        return LSTMCostModel(config)
    raise ValueError(f"unknown model architecture {config.arch!r} ({', '.join(ARCHS)})")


def with_platform_input(model: nn.Module, features: int) -> nn.Module:
    """A copy of ``model`` that also reads a platform descriptor of width ``features``. The new
    input starts with zero weights, so the copy scores exactly as ``model`` does until trained."""
    config: ModelConfig = model.config  # type: ignore[assignment]
    if config.platform_features == features:
        return copy.deepcopy(model)
    if config.members > 1:
        raise ValueError("an ensemble gains a platform input member by member, not as a whole")
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


def weights_checksum(state_dict: dict[str, torch.Tensor]) -> str:
    """SHA-256 over every tensor's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()


def save(
    path: str | Path,
    model: nn.Module,
    vocab: Vocab,
    tokenizer: TokenizerConfig,
    extra: dict[str, Any] | None = None,
) -> None:
    config: ModelConfig = model.config  # type: ignore[assignment]
    # CPU copies: a model trained on a GPU is saved as one trained here (the same bytes).
    state = {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    torch.save(
        {
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "config": config.to_dict(),
            "vocab": vocab.freeze().to_dict(),
            "tokenizer": tokenizer.to_dict(),
            "state_dict": state,
            "checksum": weights_checksum(state),
            "extra": extra or {},
        },
        path,
    )


def _read(path: str | Path) -> dict[str, Any]:
    """The checkpoint's dictionary, of a version this tcl reads, with its checksum verified."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as err:  # truncated, empty, text, or a pickle that is not plain data
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise CheckpointError(f"{path}: not a readable tcl checkpoint ({reason})") from None
    version = ckpt.get("format_version") if isinstance(ckpt, dict) else None
    if version not in (1, CHECKPOINT_FORMAT_VERSION):
        raise FormatVersionError(
            f"{path}: checkpoint format {version!r}; this tcl reads {CHECKPOINT_FORMAT_VERSION}"
        )
    missing = [k for k in ("config", "vocab", "tokenizer", "state_dict") if k not in ckpt]
    if version >= 2 and "checksum" not in ckpt:
        missing.append("checksum")
    if missing:
        raise CheckpointError(f"{path}: the checkpoint has no {', '.join(missing)}")
    if not isinstance(ckpt["state_dict"], dict) or not all(
        isinstance(t, torch.Tensor) for t in ckpt["state_dict"].values()
    ):
        raise CheckpointError(f"{path}: its state_dict is not a dictionary of tensors")
    if version >= 2 and weights_checksum(ckpt["state_dict"]) != ckpt["checksum"]:
        raise CheckpointError(f"{path}: the weights do not match their checksum (a corrupted file)")
    return ckpt


def load(path: str | Path) -> tuple[nn.Module, Vocab, TokenizerConfig, dict[str, Any]]:
    """(model in eval mode, frozen vocabulary, tokenizer settings, extra) of a checkpoint."""
    ckpt = _read(path)
    try:
        config = ModelConfig.from_dict(ckpt["config"])
        vocab = Vocab.from_dict(ckpt["vocab"])
        tokenizer = TokenizerConfig.from_dict(ckpt["tokenizer"])
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise CheckpointError(f"{path}: bad model settings ({err})") from None
    if len(vocab) != config.vocab_size or tokenizer.num_fields != config.num_fields:
        raise FormatVersionError(f"{path}: vocabulary or tokenizer does not match the model config")
    model = build(config)
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:300]
        raise CheckpointError(f"{path}: the weights do not fit the model ({detail})") from None
    model.eval()
    return model, vocab, tokenizer, dict(ckpt.get("extra", {}))


def moved_to(path: str | Path) -> list[dict[str, str]]:
    """The machines ``tcl distill`` moved the checkpoint at ``path`` to, in order: each a
    platform's ``{"name", "id", "machine"}`` (none for a model never moved, or moved only to
    directories whose manifest names no platform)."""
    return moves_in(_read(path).get("extra"))


def moves_in(extra: Any) -> list[dict[str, str]]:
    """The ``moved_to`` entries of a checkpoint's ``extra`` (:func:`moved_to`), each checked."""
    moves = extra.get("moved_to") if isinstance(extra, dict) else None
    return [
        {"name": str(m.get("name", "")), "id": str(m["id"]), "machine": str(m.get("machine", ""))}
        for m in (moves if isinstance(moves, list) else [])
        if isinstance(m, dict) and "id" in m
    ]


__all__ = [
    "ForPlatform",
    "ModelConfig",
    "build",
    "load",
    "moved_to",
    "moves_in",
    "num_parameters",
    "parameter_bytes",
    "save",
    "weights_checksum",
    "with_platform_input",
]
