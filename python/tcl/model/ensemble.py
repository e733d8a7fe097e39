"""K cost models of one shape, trained from different seeds, scoring as one.

One model's held-out ranking moves by ~0.1 top-1 from seed to seed (bench/README.md, *Held-out
accuracy*); the mean of several models' scores moves much less and ranks better than any of
them. Each member's score is standardized with its own mean and deviation over the records it
was trained on (``calibrate``): separately trained models' scores have different scales, and a
fixed affine map per member keeps a program's score independent of the batch it is scored in,
as MetaSchedule's cost-model interface needs (a mean of within-batch ranks would not be).

A checkpoint stores an ensemble as one model whose :class:`ModelConfig` has ``members`` > 1;
:func:`tcl.model.build` and :func:`tcl.model.load` make it like any other.

:func:`averaged` is the other way to combine K models: one model whose weights are the members'
mean (a "model soup", Wortsman et al., 2022), one model's size and scoring time. It is only
meaningful for members fine-tuned from one checkpoint, which stay in that checkpoint's basin;
models trained from different random starts have unrelated weights and average to noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from tcl.model.common import ModelConfig


class Ensemble(nn.Module):
    """``config.members`` models of ``config``'s shape; the score is the mean of their
    standardized scores."""

    def __init__(self, config: ModelConfig, members: Sequence[nn.Module] | None = None) -> None:
        super().__init__()
        from tcl.model import build

        self.config = config
        single = replace(config, members=1)
        if members is None:
            members = [build(single) for _ in range(config.members)]
        if len(members) != config.members or any(m.config != single for m in members):
            raise ValueError(f"an ensemble of {config.members} needs that many models of its shape")
        self.members = nn.ModuleList(members)
        self.register_buffer("shift", torch.zeros(config.members))
        self.register_buffer("scale", torch.ones(config.members))

    @torch.no_grad()
    def calibrate(self, scores: torch.Tensor) -> None:
        """Sets each member's standardization from its ``scores`` (members, n) on the records it
        learnt from."""
        if scores.shape[0] != len(self.members) or scores.shape[1] < 2:
            raise ValueError(
                f"calibration needs (members, n >= 2) scores, got {tuple(scores.shape)}"
            )
        self.shift.copy_(scores.mean(1))  # type: ignore[operator]
        self.scale.copy_(scores.std(1).clamp(min=1e-6))  # type: ignore[operator]

    def forward(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Scores (B,), larger is faster: the members' standardized scores, averaged."""
        extra = () if platform is None else (platform,)
        scores = torch.stack([m(kinds, fields, *extra) for m in self.members])
        return self._combine(scores)

    def score_and_embed(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(scores (B,) as ``forward``'s, the members' embeddings side by side (B, K x d))."""
        extra = () if platform is None else (platform,)
        parts = [m.score_and_embed(kinds, fields, *extra) for m in self.members]  # type: ignore[operator]
        scores = torch.stack([score for score, _ in parts])
        return self._combine(scores), torch.cat([embedding for _, embedding in parts], 1)

    def _combine(self, scores: torch.Tensor) -> torch.Tensor:
        standardized = (scores - self.shift[:, None]) / self.scale[:, None]  # type: ignore[index]
        return standardized.mean(0)


@torch.no_grad()
def mean_state(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The tensor-wise mean of state dicts of one shape (an integer tensor, a count, is the same
    in every one and kept as the first's)."""
    return {
        name: torch.stack([s[name] for s in states]).mean(0) if first.is_floating_point() else first
        for name, first in states[0].items()
    }


@torch.no_grad()
def averaged(members: Sequence[nn.Module]) -> nn.Module:
    """One model of the members' shape whose every weight is their mean (members fine-tuned from
    one checkpoint; see the module's docstring)."""
    from tcl.model import build

    if not members:
        raise ValueError("averaging needs at least one model")
    config: ModelConfig = members[0].config  # type: ignore[assignment]
    if any(m.config != config for m in members):
        raise ValueError("averaged models must share one config (one checkpoint fine-tuned)")
    net = build(config)
    net.load_state_dict(mean_state([m.state_dict() for m in members]))
    return net.eval()
