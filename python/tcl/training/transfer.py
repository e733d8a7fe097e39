"""Baselines for moving a cost model to new platforms, beside tcl.training.distill in the same
harness: fine-tuning (``train.train`` with ``init=``), training from scratch (``train.train``), and
multi-task learning with one score head per platform (MTL-TLP style), defined here.

MTL needs every platform's data at once and grows by a head per platform; fine-tuning keeps the
size but forgets; distillation keeps the size and (through EWC) what it knew.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from tcl.model import ModelConfig, build
from tcl.model.common import ScoreHead, SequenceCostModel
from tcl.records.dataset import Dataset
from tcl.training.losses import lambdarank
from tcl.training.train import TrainConfig, draw_task_batch, optimize, per_task_loss, task_groups


class MultiHeadModel(nn.Module):
    """A shared encoder and body with one :class:`ScoreHead` per platform."""

    def __init__(self, config: ModelConfig, platforms: int) -> None:
        super().__init__()
        self.config = config
        shared: SequenceCostModel = build(config)  # type: ignore[assignment]
        del shared.head  # each platform has its own
        self.shared = shared
        self.heads = nn.ModuleList(ScoreHead(config.d_model) for _ in range(platforms))

    def forward(self, kinds: torch.Tensor, fields: torch.Tensor, platform: int) -> torch.Tensor:
        hidden = self.shared.hidden(kinds, fields, None)
        out: torch.Tensor = self.heads[platform](hidden, kinds > 0)
        return out

    def for_platform(self, platform: int) -> nn.Module:
        """A scoring module (kinds, fields) -> scores of one platform (for ``inputs.predict``)."""
        return _OneHead(self, platform)


class _OneHead(nn.Module):
    def __init__(self, model: MultiHeadModel, platform: int) -> None:
        super().__init__()
        self.model, self.platform = model, platform

    def forward(self, kinds: torch.Tensor, fields: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model(kinds, fields, self.platform)
        return out


def train_multitask(
    datasets: list[Dataset], model_config: ModelConfig, config: TrainConfig | None = None
) -> MultiHeadModel:
    """Trains one model on every platform's records at once; each batch comes from one platform
    (drawn uniformly, so a small target set is not drowned by a large source set) and is ranked
    by that platform's head."""
    config = config or TrainConfig()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = MultiHeadModel(model_config, len(datasets))
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    groups = [task_groups(d.records) for d in datasets]
    labels = [torch.from_numpy(d.records.throughput()).float() for d in datasets]
    usable = [p for p, g in enumerate(groups) if g]
    if not usable:
        raise ValueError("no platform has a task with two measured programs")

    def loss_at(step: int) -> torch.Tensor:
        p = int(rng.choice(usable))
        kinds, fields, y, bounds, _ = draw_task_batch(
            datasets[p].records,
            groups[p],
            labels[p],
            config.tasks_per_batch,
            config.programs_per_task,
            rng,
        )
        return per_task_loss(lambdarank, model(kinds, fields, p), y, bounds)

    model.train()
    optimize(optimizer, config.max_steps, loss_at)
    model.eval()
    return copy.deepcopy(model)


__all__ = ["MultiHeadModel", "train_multitask"]
