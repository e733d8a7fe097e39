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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tcl.model import build, with_platform_input
from tcl.model.common import ForPlatform, ModelConfig, SequenceCostModel
from tcl.model.ensemble import averaged, mean_state
from tcl.records.dataset import Dataset
from tcl.training.losses import lambdarank
from tcl.training.train import (
    TrainConfig,
    centered_squared_error,
    draw_task_batch,
    learning_rate,
    optimize,
    per_task_loss,
    task_groups,
)

CHAIN_FORMAT_VERSION = 2  # 2: platform descriptors (1 still reads)


@dataclass(frozen=True)
class DistillConfig:
    progress_steps: int = 300
    compress_steps: int = 300
    lr: float = 2e-3
    warmup_steps: int = 30
    # bench/bench_distill_sweep.py (native-2t -> avx2-1t -> x86-64-1t, 10%, one seed): without
    # descriptors lambda 100 / 10 / 1 gave new-platform top-1 0.461 / 0.493 / 0.525 at forgetting
    # 0.001 / 0.063 / 0.097; with descriptors and keep_weight 1, lambda 1 gave 0.534 at 0.002.
    ewc_lambda: float = 1.0
    ewc_gamma: float = 0.9  # decay of the accumulated Fisher (online EWC)
    # "kb": the active column starts as a copy of the knowledge base (what it knows transfers,
    # as in fine-tuning); "fresh": random weights, the KB reached only through the adapters.
    column_init: str = "kb"
    # Weight of the ranking loss on the measured target records during compress, beside the
    # distillation loss (0: pure distillation, as in Progress & Compress).
    label_weight: float = 0.0
    # With platform descriptors: weight of keeping the knowledge base's own scores for the
    # platforms seen before, under their descriptors, on the new platform's inputs (learning
    # without forgetting: the old platforms' data is never needed).
    keep_weight: float = 1.0
    tasks_per_batch: int = 8
    programs_per_task: int = 64
    fisher_batches: int = 8
    # Of each target task's records, the fraction a user measures: RDU's pick (pick_target).
    target_fraction: float = 0.1
    seed: int = 0
    # A progress bar per phase on stderr (tcl distill, unless --quiet); not a hyperparameter.
    progress: bool = False

    def __post_init__(self) -> None:
        if self.column_init not in ("kb", "fresh"):
            raise ValueError(f"column_init must be 'kb' or 'fresh', not {self.column_init!r}")


def _reading_platform(kb: SequenceCostModel, descriptor: list[float] | None) -> SequenceCostModel:
    """A copy of ``kb``, with a platform input of the descriptor's width when one is given."""
    if descriptor is None:
        return copy.deepcopy(kb)
    return with_platform_input(kb, len(descriptor))  # type: ignore[return-value]


class ProgressiveColumn(nn.Module):
    """The active column with lateral adapters from a frozen knowledge base."""

    def __init__(self, kb: SequenceCostModel, init_from_kb: bool = False) -> None:
        super().__init__()
        self.kb = copy.deepcopy(kb)  # frozen here, never the caller's model
        for p in self.kb.parameters():
            p.requires_grad_(False)
        config: ModelConfig = kb.config
        self.ac: SequenceCostModel = (
            copy.deepcopy(kb) if init_from_kb else build(config)  # type: ignore[assignment]
        )
        for p in self.ac.parameters():
            p.requires_grad_(True)
        self.lateral_in = nn.Linear(config.d_model, config.d_model)
        self.lateral_out = nn.Linear(config.d_model, config.d_model)
        for layer in (self.lateral_in, self.lateral_out):  # start as the plain active column
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(
        self, kinds: torch.Tensor, fields: torch.Tensor, platform: torch.Tensor | None = None
    ) -> torch.Tensor:
        padding, mask = kinds == 0, kinds > 0
        with torch.no_grad():
            x_kb = self.kb.encoder(kinds, fields, platform)
            pooled_kb = self.kb.head.pool(self.kb.body(x_kb, padding), mask)
        x = self.ac.encoder(kinds, fields, platform) + self.lateral_in(x_kb)
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
    """Endless task batches of ``data`` (labels are 0 where a record was not measured)."""
    groups = task_groups(data.records)
    if not groups:
        raise ValueError("no task has two programs")
    labels = torch.from_numpy(data.records.throughput()).float()
    while True:
        kinds, fields, y, bounds, _ = draw_task_batch(
            data.records, groups, labels, config.tasks_per_batch, config.programs_per_task, rng
        )
        yield kinds, fields, y, bounds


def _platform(descriptor: list[float] | None, kinds: torch.Tensor) -> torch.Tensor | None:
    """The descriptor repeated for every program of a batch (None: no platform input)."""
    if descriptor is None:
        return None
    return torch.tensor(descriptor, dtype=torch.float32).expand(len(kinds), -1)


def _ranking_loss(scores: torch.Tensor, labels: torch.Tensor, bounds: np.ndarray) -> torch.Tensor:
    return per_task_loss(lambdarank, scores, labels, bounds)


def fisher_diagonal(
    model: SequenceCostModel,
    data: Dataset,
    config: DistillConfig,
    descriptor: list[float] | None = None,
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
        scores = model(kinds, fields, _platform(descriptor, kinds))
        _ranking_loss(scores, labels, bounds).backward()  # type: ignore[no-untyped-call]
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
    # Platform descriptors (platforms.descriptor) of the platforms seen, when the knowledge
    # base reads one: then one model scores each platform by its own descriptor.
    descriptors: dict[str, list[float]] = field(default_factory=dict)

    def scorer(self, platform: str) -> nn.Module:
        """The knowledge base as a model of ``platform`` (bound to its descriptor if any)."""
        if platform in self.descriptors:
            return ForPlatform(self.kb, self.descriptors[platform])
        return self.kb

    @classmethod
    def start(
        cls,
        kb: SequenceCostModel,
        platform: str,
        source: Dataset | None = None,
        config: DistillConfig | None = None,
        descriptor: list[float] | None = None,
    ) -> Chain:
        """The chain at its first platform: the model trained there, anchored (for EWC) at its
        weights with the Fisher of that platform's records when they are given. With a
        ``descriptor`` the knowledge base gains a platform input (zero weights at first, so it
        scores as before), and each later platform is learnt under its own descriptor."""
        kb = _reading_platform(kb, descriptor)
        descriptors = {} if descriptor is None else {platform: list(descriptor)}
        if source is None:
            return cls(kb, platforms=[platform], descriptors=descriptors)
        fisher = fisher_diagonal(kb, source, config or DistillConfig(), descriptor)
        anchor = {n: p.detach().clone() for n, p in kb.named_parameters()}
        return cls(kb, fisher, anchor, [platform], descriptors)

    def save(self, path: str | Path) -> None:
        torch.save(
            {
                "format_version": CHAIN_FORMAT_VERSION,
                "config": self.kb.config.to_dict(),
                "kb": self.kb.state_dict(),
                "fisher": self.fisher,
                "anchor": self.anchor,
                "platforms": self.platforms,
                "descriptors": self.descriptors,
            },
            path,
        )

    @classmethod
    def averaged(cls, chains: Sequence[Chain]) -> Chain:
        """One chain whose knowledge base, Fisher and anchor are the means of ``chains``: the
        same moves run in several seeds (tcl distill --members), averaged as a model soup."""
        if not chains or any(c.platforms != chains[0].platforms for c in chains):
            raise ValueError("averaged chains must have moved through the same platforms")
        kb: SequenceCostModel = averaged([c.kb for c in chains])  # type: ignore[assignment]
        fisher = mean_state([c.fisher for c in chains])
        anchor = mean_state([c.anchor for c in chains])
        return cls(kb, fisher, anchor, list(chains[0].platforms), dict(chains[0].descriptors))

    @classmethod
    def load(cls, path: str | Path) -> Chain:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state.get("format_version") not in (1, CHAIN_FORMAT_VERSION):
            raise ValueError(
                f"{path}: chain format {state.get('format_version')!r}, "
                f"expected {CHAIN_FORMAT_VERSION}"
            )
        kb: SequenceCostModel = build(ModelConfig.from_dict(state["config"]))  # type: ignore[assignment]
        kb.load_state_dict(state["kb"])
        return cls(
            kb,
            dict(state["fisher"]),
            dict(state["anchor"]),
            list(state["platforms"]),
            {k: list(v) for k, v in state.get("descriptors", {}).items()},
        )


def _optimize(
    params: list[nn.Parameter], config: DistillConfig, steps: int, loss_at: Any, phase: str
) -> None:
    """AdamW over ``params`` with train's schedule (warm-up, cosine) for ``steps``."""
    schedule = TrainConfig(lr=config.lr, max_steps=steps, warmup_steps=config.warmup_steps)
    optimizer = torch.optim.AdamW(params, lr=config.lr)
    optimize(
        optimizer,
        steps,
        lambda _: loss_at(),
        lambda step: learning_rate(step, schedule),
        progress=phase if config.progress else None,
    )


def progress(
    chain: Chain, target: Dataset, config: DistillConfig, descriptor: list[float] | None = None
) -> ProgressiveColumn:
    """Trains a new active column on the target platform; the knowledge base does not change."""
    torch.manual_seed(config.seed)
    column = ProgressiveColumn(chain.kb, init_from_kb=config.column_init == "kb")
    params = [p for n, p in column.named_parameters() if not n.startswith("kb.")]
    batches = _batches(target, config, np.random.default_rng(config.seed))
    column.train()
    chain.kb.eval()

    def loss_at() -> torch.Tensor:
        kinds, fields, labels, bounds = next(batches)
        return _ranking_loss(column(kinds, fields, _platform(descriptor, kinds)), labels, bounds)

    _optimize(params, config, config.progress_steps, loss_at, "progress")
    column.eval()
    return column


def _distillation_loss(
    student: torch.Tensor, teacher: torch.Tensor, bounds: np.ndarray
) -> torch.Tensor:
    return per_task_loss(centered_squared_error, student, teacher, bounds)


def compress(
    chain: Chain,
    column: ProgressiveColumn,
    target: Dataset,
    platform: str,
    config: DistillConfig,
    pool: Dataset | None = None,
    descriptor: list[float] | None = None,
) -> Chain:
    """Distils the active column into the knowledge base under the EWC penalty; returns the new
    chain state (Fisher accumulated with decay, anchor at the new weights).

    The distillation needs inputs, not measurements: ``pool`` (default ``target``) holds the
    target platform's candidate programs, e.g. the whole pool the measured ones were sampled
    from, so the KB learns the column's view of far more programs than were measured."""
    torch.manual_seed(config.seed)
    kb = copy.deepcopy(chain.kb)
    inputs = _batches(
        pool if pool is not None else target, config, np.random.default_rng(config.seed + 2)
    )
    measured = _batches(target, config, np.random.default_rng(config.seed + 3))
    old = [d for name, d in chain.descriptors.items() if name != platform]
    keep = config.keep_weight if descriptor is not None and old else 0.0
    teacher_kb = copy.deepcopy(chain.kb).eval()  # the KB as it was, for the old platforms
    calls = itertools.count()
    kb.train()

    def loss_at() -> torch.Tensor:
        kinds, fields, _, bounds = next(inputs)
        here = _platform(descriptor, kinds)
        with torch.no_grad():
            teacher = column(kinds, fields, here)
        loss = _distillation_loss(kb(kinds, fields, here), teacher, bounds)
        if keep > 0:  # one earlier platform per step, in turn
            before = _platform(old[next(calls) % len(old)], kinds)
            with torch.no_grad():
                kept = teacher_kb(kinds, fields, before)
            loss = loss + keep * _distillation_loss(kb(kinds, fields, before), kept, bounds)
        if config.label_weight > 0:
            kinds, fields, labels, bounds = next(measured)
            scores = kb(kinds, fields, _platform(descriptor, kinds))
            loss = loss + config.label_weight * _ranking_loss(scores, labels, bounds)
        if chain.fisher:
            loss = loss + config.ewc_lambda * ewc_penalty(kb, chain.fisher, chain.anchor)
        return loss

    _optimize(list(kb.parameters()), config, config.compress_steps, loss_at, "compress")
    kb.eval()
    new_fisher = fisher_diagonal(kb, target, config, descriptor)
    fisher = {
        n: config.ewc_gamma * chain.fisher.get(n, torch.zeros_like(f)) + f
        for n, f in new_fisher.items()
    }
    anchor = {n: p.detach().clone() for n, p in kb.named_parameters()}
    descriptors = dict(chain.descriptors)
    if descriptor is not None:
        descriptors[platform] = list(descriptor)
    return Chain(kb, fisher, anchor, [*chain.platforms, platform], descriptors)


def step(
    chain: Chain,
    target: Dataset,
    platform: str,
    config: DistillConfig | None = None,
    pool: Dataset | None = None,
    descriptor: list[float] | None = None,
) -> Chain:
    """One move to a new platform: progress on the measured ``target`` records, then compress
    on the ``pool`` of the platform's candidate programs (default: the target records). With
    the platform's ``descriptor``, the knowledge base learns it as that platform's behaviour."""
    config = config or DistillConfig()
    if descriptor is not None and not chain.kb.config.platform_features:
        chain = replace(chain, kb=_reading_platform(chain.kb, descriptor))
    column = progress(chain, target, config, descriptor)
    return compress(chain, column, target, platform, config, pool, descriptor)


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


def pick_target(chain: Chain, data: Dataset, config: DistillConfig | None = None) -> np.ndarray:
    """Rows of ``data`` worth measuring on the new platform: RDU's pick of each task's records
    (``config.target_fraction``), in the embedding space of the chain's latest model."""
    from tcl.sampling import sampler

    config = config or DistillConfig()
    scorer = chain.scorer(chain.platforms[-1]) if chain.platforms else chain.kb
    return sampler.select_per_task(
        sampler.model_embeddings(scorer, data.records),
        data.records.columns["task"],
        config.target_fraction,
        uncertainty=sampler.model_uncertainty(scorer, data.records, progress=config.progress),
    )
