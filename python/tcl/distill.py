"""Continual knowledge distillation: move a cost model from platform to platform with little
target data and a constant size (Progress & Compress, Schwarz et al. 2018, as TCL uses it).

- **Progress**: the knowledge base (KB, the model so far) is frozen; a fresh active column (AC)
  learns the new platform with the ranking loss, reading the KB's features through lateral
  adapters (at the encoder and at the pooled representation).
- **Compress**: the KB learns the AC's scores on the new platform's inputs (distillation),
  held near what it knew by online EWC: ``lambda * sum_i F_i (theta_i - theta*_i)^2`` with a
  diagonal Fisher F accumulated over platforms (decayed by gamma) and anchor weights theta*.
- After the step, the AC is dropped: one KB-sized model serves every platform seen, and no old
  platform's data is needed.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tcl.dataset import Dataset
from tcl.losses import lambdarank
from tcl.model import build
from tcl.model.common import ModelConfig, SequenceCostModel
from tcl.train import draw_task_batch, per_task_loss, task_groups

CHAIN_FORMAT_VERSION = 1


@dataclass(frozen=True)
class DistillConfig:
    progress_steps: int = 300
    compress_steps: int = 300
    lr: float = 2e-3
    ewc_lambda: float = 100.0
    ewc_gamma: float = 0.9  # decay of the accumulated Fisher (online EWC)
    tasks_per_batch: int = 8
    programs_per_task: int = 64
    fisher_batches: int = 8
    seed: int = 0


class ProgressiveColumn(nn.Module):
    """The active column with lateral adapters from a frozen knowledge base."""

    def __init__(self, kb: SequenceCostModel) -> None:
        super().__init__()
        self.kb = copy.deepcopy(kb)  # frozen here, never the caller's model
        for p in self.kb.parameters():
            p.requires_grad_(False)
        config: ModelConfig = kb.config
        self.ac: SequenceCostModel = build(config)  # type: ignore[assignment]
        self.lateral_in = nn.Linear(config.d_model, config.d_model)
        self.lateral_out = nn.Linear(config.d_model, config.d_model)
        for layer in (self.lateral_in, self.lateral_out):  # start as the plain active column
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, kinds: torch.Tensor, fields: torch.Tensor) -> torch.Tensor:
        padding, mask = kinds == 0, kinds > 0
        with torch.no_grad():
            x_kb = self.kb.encoder(kinds, fields)
            pooled_kb = self.kb.head.pool(self.kb.body(x_kb, padding), mask)
        x = self.ac.encoder(kinds, fields) + self.lateral_in(x_kb)
        pooled = self.ac.head.pool(self.ac.body(x, padding), mask) + self.lateral_out(pooled_kb)
        scores: torch.Tensor = self.ac.head.out(pooled).squeeze(-1)
        return scores


def ewc_penalty(
    model: nn.Module, fisher: dict[str, torch.Tensor], anchor: dict[str, torch.Tensor]
) -> torch.Tensor:
    """sum_i F_i (theta_i - theta*_i)^2 over the parameters that have a Fisher entry."""
    total = torch.zeros(())
    for name, p in model.named_parameters():
        if name in fisher:
            total = total + (fisher[name] * (p - anchor[name]) ** 2).sum()
    return total


def _batches(data: Dataset, config: DistillConfig, rng: np.random.Generator) -> Any:
    groups = task_groups(data.records)
    if not groups:
        raise ValueError("no task has two measured programs")
    labels = torch.from_numpy(data.records.throughput()).float()
    while True:
        kinds, fields, y, bounds, _ = draw_task_batch(
            data.records, groups, labels, config.tasks_per_batch, config.programs_per_task, rng
        )
        yield kinds, fields, y, bounds


def _ranking_loss(scores: torch.Tensor, labels: torch.Tensor, bounds: np.ndarray) -> torch.Tensor:
    return per_task_loss(lambdarank, scores, labels, bounds)


def fisher_diagonal(
    model: SequenceCostModel, data: Dataset, config: DistillConfig
) -> dict[str, torch.Tensor]:
    """Diagonal empirical Fisher of the ranking loss at the current weights, scaled to mean 1
    over all parameters (the loss's own scale would otherwise set the meaning of lambda)."""
    rng = np.random.default_rng(config.seed + 1)
    batches = _batches(data, config, rng)
    fisher = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    model.eval()
    for _ in range(config.fisher_batches):
        kinds, fields, labels, bounds = next(batches)
        model.zero_grad()
        _ranking_loss(model(kinds, fields), labels, bounds).backward()  # type: ignore[no-untyped-call]
        for n, p in model.named_parameters():
            if p.grad is not None:
                fisher[n] += p.grad.detach() ** 2 / config.fisher_batches
    mean = torch.cat([f.flatten() for f in fisher.values()]).mean()
    return {n: f / mean for n, f in fisher.items()} if mean > 0 else fisher


@dataclass
class Chain:
    """The state carried from platform to platform: the knowledge base and its EWC terms."""

    kb: SequenceCostModel
    fisher: dict[str, torch.Tensor] = field(default_factory=dict)
    anchor: dict[str, torch.Tensor] = field(default_factory=dict)
    platforms: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        kb: SequenceCostModel,
        platform: str,
        source: Dataset | None = None,
        config: DistillConfig | None = None,
    ) -> Chain:
        """The chain at its first platform: the model trained there, anchored (for EWC) at its
        weights with the Fisher of that platform's records when they are given."""
        if source is None:
            return cls(copy.deepcopy(kb), platforms=[platform])
        fisher = fisher_diagonal(kb, source, config or DistillConfig())
        anchor = {n: p.detach().clone() for n, p in kb.named_parameters()}
        return cls(copy.deepcopy(kb), fisher, anchor, [platform])

    def save(self, path: str | Path) -> None:
        torch.save(
            {
                "format_version": CHAIN_FORMAT_VERSION,
                "config": self.kb.config.to_dict(),
                "kb": self.kb.state_dict(),
                "fisher": self.fisher,
                "anchor": self.anchor,
                "platforms": self.platforms,
            },
            path,
        )

    @classmethod
    def load(cls, path: str | Path) -> Chain:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state.get("format_version") != CHAIN_FORMAT_VERSION:
            raise ValueError(
                f"{path}: chain format {state.get('format_version')!r}, "
                f"expected {CHAIN_FORMAT_VERSION}"
            )
        kb: SequenceCostModel = build(ModelConfig.from_dict(state["config"]))  # type: ignore[assignment]
        kb.load_state_dict(state["kb"])
        return cls(kb, dict(state["fisher"]), dict(state["anchor"]), list(state["platforms"]))


def progress(chain: Chain, target: Dataset, config: DistillConfig) -> ProgressiveColumn:
    """Trains a new active column on the target platform; the knowledge base does not change."""
    torch.manual_seed(config.seed)
    column = ProgressiveColumn(chain.kb)
    params = [p for n, p in column.named_parameters() if not n.startswith("kb.")]
    optimizer = torch.optim.AdamW(params, lr=config.lr)
    batches = _batches(target, config, np.random.default_rng(config.seed))
    column.train()
    chain.kb.eval()
    for _ in range(config.progress_steps):
        kinds, fields, labels, bounds = next(batches)
        loss = _ranking_loss(column(kinds, fields), labels, bounds)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    column.eval()
    return column


def compress(
    chain: Chain, column: ProgressiveColumn, target: Dataset, platform: str, config: DistillConfig
) -> Chain:
    """Distils the active column into the knowledge base under the EWC penalty; returns the new
    chain state (Fisher accumulated with decay, anchor at the new weights)."""
    torch.manual_seed(config.seed)
    kb = copy.deepcopy(chain.kb)
    optimizer = torch.optim.AdamW(kb.parameters(), lr=config.lr)
    batches = _batches(target, config, np.random.default_rng(config.seed + 2))
    kb.train()
    for _ in range(config.compress_steps):
        kinds, fields, _, bounds = next(batches)
        with torch.no_grad():
            teacher = column(kinds, fields)
        student = kb(kinds, fields)
        # Match the teacher's scores task by task, up to a shift: only order matters.
        loss = torch.stack(
            [
                ((student[a:b] - student[a:b].mean()) - (teacher[a:b] - teacher[a:b].mean()))
                .pow(2)
                .mean()
                for a, b in itertools.pairwise(bounds)
            ]
        ).mean()
        if chain.fisher:
            loss = loss + config.ewc_lambda * ewc_penalty(kb, chain.fisher, chain.anchor)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    kb.eval()
    new_fisher = fisher_diagonal(kb, target, config)
    fisher = {
        n: config.ewc_gamma * chain.fisher.get(n, torch.zeros_like(f)) + f
        for n, f in new_fisher.items()
    }
    anchor = {n: p.detach().clone() for n, p in kb.named_parameters()}
    return Chain(kb, fisher, anchor, [*chain.platforms, platform])


def step(
    chain: Chain, target: Dataset, platform: str, config: DistillConfig | None = None
) -> Chain:
    """One move to a new platform: progress, then compress."""
    config = config or DistillConfig()
    column = progress(chain, target, config)
    return compress(chain, column, target, platform, config)


__all__ = [
    "Chain",
    "DistillConfig",
    "ProgressiveColumn",
    "compress",
    "ewc_penalty",
    "fisher_diagonal",
    "progress",
    "step",
]
