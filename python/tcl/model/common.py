"""What every sequence cost model shares: the token encoder in front and the pooled head."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import nn

# The architectures tcl.model.build makes (the CLI lists them too: `tcl train --model`).
ARCHS = ("mamba", "attention", "lstm")


@dataclass(frozen=True)
class ModelConfig:
    """A cost model's shape; saved in every checkpoint and checked on load.

    Attributes
    ----------
    arch : str
        "mamba", "attention" (TLP-style) or "lstm".
    vocab_size, num_fields, max_len : int
        From the tokenizer the model was trained with.
    d_model, n_layers : int
        Width and depth.
    d_state, d_conv, expand : int
        Mamba's SSM state size, causal-convolution width and inner expansion.
    n_heads : int
        Attention heads (attention only).
    platform_features : int
        Width of an optional platform descriptor input (0: none).
    dropout : float
    members : int
        Models of this shape averaged as one (:mod:`tcl.model.ensemble`); 1: a single model.
    """

    arch: str = "mamba"
    vocab_size: int = 128
    num_fields: int = 10
    max_len: int = 64
    d_model: int = 64
    n_layers: int = 2
    d_state: int = 8  # 16 doubles the scan's time on 2 CPU cores for no measured gain yet
    d_conv: int = 4
    expand: int = 1
    n_heads: int = 4
    platform_features: int = 0
    dropout: float = 0.1
    members: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """The config of ``data``; raises ValueError on unknown settings and on values outside
        :data:`CONFIG_BOUNDS` (checked before anything is allocated)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model settings: {sorted(unknown)}")
        for name, value in data.items():
            if name == "arch":
                if value not in ARCHS:
                    raise ValueError(f"arch {value!r} is not one of {', '.join(ARCHS)}")
            elif name == "dropout":
                if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                    raise ValueError(f"dropout {value!r} is not in [0, 1)")
            else:
                low, high = CONFIG_BOUNDS[name]
                if type(value) is not int or not low <= value <= high:
                    raise ValueError(f"{name} {value!r} is not a whole number in [{low}, {high}]")
        return cls(**data)


# Generous bounds on every size a checkpoint may ask for: a corrupted or hostile config fails
# here with its name, not in a 16 TB allocation.
CONFIG_BOUNDS: dict[str, tuple[int, int]] = {
    "vocab_size": (2, 1_000_000),
    "num_fields": (1, 256),
    "max_len": (1, 65_536),
    "d_model": (1, 8192),
    "n_layers": (1, 128),
    "d_state": (1, 1024),
    "d_conv": (1, 64),
    "expand": (1, 16),
    "n_heads": (1, 256),
    "platform_features": (0, 1024),
    "members": (1, 64),
}


class TokenEncoder(nn.Module):
    """Kind embedding + a linear projection of the numeric fields (+ platform features)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.kind = nn.Embedding(config.vocab_size, config.d_model, padding_idx=0)
        self.fields = nn.Linear(config.num_fields, config.d_model)
        self.platform = (
            nn.Linear(config.platform_features, config.d_model)
            if config.platform_features
            else None
        )
        if self.platform is not None:
            # A descriptor feature never seen in training (a GPU, for a model trained on CPUs)
            # keeps its starting weight: zero, so that it adds nothing rather than noise.
            nn.init.zeros_(self.platform.weight)
            nn.init.zeros_(self.platform.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> torch.Tensor:
        """kinds (B, L) int64, fields (B, L, F) float32, platform (B, P) -> (B, L, d_model)."""
        x = self.kind(kinds) + self.fields(fields)
        if self.platform is not None and platform is not None:
            x = x + self.platform(platform)[:, None, :]
        return self.dropout(x)


class ScoreHead(nn.Module):
    """Masked mean over the real tokens, then a score (larger = faster)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, 1))

    def pool(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask[..., None].to(x.dtype)
        return self.norm((x * m).sum(1) / m.sum(1).clamp(min=1.0))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.out(self.pool(x, mask)).squeeze(-1)


class SequenceCostModel(nn.Module):
    """Encoder -> ``body`` (the architecture) -> pooled score. Subclasses define ``body``."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = TokenEncoder(config)
        self.head = ScoreHead(config.d_model)

    def body(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        """Encoded tokens (B, L, d_model) and padding mask (B, L) -> hidden (B, L, d_model)."""
        raise NotImplementedError

    def hidden(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None
    ) -> torch.Tensor:
        return self.body(self.encoder(kinds, fields, platform), kinds == 0)

    def embed(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The pooled hidden state (B, d_model): the sampler's embedding space."""
        return self.head.pool(self.hidden(kinds, fields, platform), kinds > 0)

    def score_and_embed(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(scores (B,), embeddings (B, d_model)) from one pass: what ``forward`` and ``embed``
        return, for a learner that uses both (:mod:`tcl.training.task_gp`)."""
        pooled = self.embed(kinds, fields, platform)
        return self.head.out(pooled).squeeze(-1), pooled

    def forward(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Scores (B,) of kinds (B, L) int64 and fields (B, L, F) float32; larger is faster."""
        return self.head(self.hidden(kinds, fields, platform), kinds > 0)


class ForPlatform(nn.Module):
    """A platform-conditioned model bound to one platform's descriptor: it scores and embeds
    from (kinds, fields) alone, like any other model (training, ``predict``, the sampler)."""

    def __init__(self, model: SequenceCostModel, descriptor: list[float]) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("descriptor", torch.tensor(descriptor, dtype=torch.float32))

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    def _platform(self, kinds: torch.Tensor) -> torch.Tensor:
        return self.descriptor.expand(len(kinds), -1)  # type: ignore[operator]

    def embed(self, kinds: torch.Tensor, fields: torch.Tensor) -> torch.Tensor:
        return self.model.embed(kinds, fields, self._platform(kinds))

    def score_and_embed(
        self, kinds: torch.Tensor, fields: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.score_and_embed(kinds, fields, self._platform(kinds))

    def forward(self, kinds: torch.Tensor, fields: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model(kinds, fields, self._platform(kinds))
        return out
