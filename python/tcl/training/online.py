"""Online fine-tuning: the cost model keeps learning from the tuner's own measurements.

The pretrained model ranks a new network's programs well but not perfectly, and every platform
has its own peculiarities; the measurements a tuning run makes are the best data there is about
both. ``OnlineTrainer`` keeps every measured program of the run per task (tokens and mean
cost) and, after each measured batch, takes a few ranking steps on replayed tasks: the task
just measured and a few others, each ranked only against its own programs, as in
``tcl.training.train``. The whole history is replayed, not the latest batch alone (a handful of
programs), so that one batch does not undo what the earlier ones taught.

The tuner's adapter (``tcl.CostModel``, ``online_steps``) and the offline simulation in
``bench/bench_online.py`` drive the same class. It is off by default: in that simulation no
setting beat the frozen base model consistently (docs/metaschedule.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from tcl.model.inputs import platform_inputs
from tcl.records import RecordSet
from tcl.training.losses import lambdarank
from tcl.training.train import optimize, per_task_loss


@dataclass(frozen=True)
class OnlineConfig:
    steps: int = 0  # ranking steps after each measured batch (0: the model is never changed)
    lr: float = 1e-4
    tasks_per_step: int = 4  # the task just measured + up to 3 replayed ones
    programs_per_task: int = 64
    seed: int = 0


@dataclass
class _TaskHistory:
    """A task's measured programs so far: padded tokens (n, max_len[, F]), mean costs (n,) and,
    for a model that reads one, each program's platform descriptor (n, P)."""

    kinds: np.ndarray
    fields: np.ndarray
    costs: np.ndarray
    platform: np.ndarray | None

    def __len__(self) -> int:
        return len(self.costs)


class OnlineTrainer:
    """Fine-tunes ``model`` (in place) on measurements as they arrive, task by task."""

    def __init__(self, model: nn.Module, config: OnlineConfig) -> None:
        self.model, self.config = model, config
        self.history: dict[str, _TaskHistory] = {}
        self.rng = np.random.default_rng(config.seed)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
        self.updates = 0

    def add(self, task: str, rs: RecordSet, costs: np.ndarray) -> None:
        """Stores measured programs of ``task`` (``costs``: mean seconds, finite)."""
        good = np.isfinite(costs) & (costs > 0)
        if not good.any():
            return
        rows = np.flatnonzero(good)
        platform = platform_inputs(self.model, rs)
        new = _TaskHistory(
            rs.kinds[rows].astype(np.int64),
            np.ascontiguousarray(rs.fields[rows]),
            np.asarray(costs, dtype=np.float64)[rows],
            None if platform is None else platform.numpy()[rows],
        )
        old = self.history.get(task)
        if old is not None:  # joined once per measured batch, not at every replaying step
            new = _TaskHistory(
                np.concatenate([old.kinds, new.kinds]),
                np.concatenate([old.fields, new.fields]),
                np.concatenate([old.costs, new.costs]),
                None if new.platform is None else np.concatenate([old.platform, new.platform]),
            )
        self.history[task] = new

    def _batch(self, task: str) -> tuple[tuple[torch.Tensor, ...], torch.Tensor, np.ndarray]:
        """Up to ``programs_per_task`` programs of ``task`` and of a few other replayed tasks:
        the model's inputs, each task's labels (its best cost / the program's cost), bounds."""
        others = [t for t, h in self.history.items() if t != task and len(h) >= 2]
        picked = list(
            self.rng.choice(
                others, size=min(len(others), self.config.tasks_per_step - 1), replace=False
            )
        )
        kinds, fields, platform, labels, sizes = [], [], [], [], [0]
        for name in [task, *picked]:
            h = self.history[name]
            rows = self.rng.permutation(len(h))[: self.config.programs_per_task]
            kinds.append(h.kinds[rows])
            fields.append(h.fields[rows])
            if h.platform is not None:
                platform.append(h.platform[rows])
            labels.append(h.costs.min() / h.costs[rows])
            sizes.append(len(rows))
        all_kinds = np.concatenate(kinds)
        length = max(1, int((all_kinds > 0).sum(axis=1).max()))
        inputs = (
            torch.from_numpy(all_kinds[:, :length]),
            torch.from_numpy(np.concatenate(fields)[:, :length]),
            *([torch.from_numpy(np.concatenate(platform))] if platform else []),
        )
        return inputs, torch.from_numpy(np.concatenate(labels)).float(), np.cumsum(sizes)

    def update(self, task: str) -> float | None:
        """``steps`` ranking steps centred on ``task``. Returns the last loss, or None when
        nothing was learnt (no steps, or fewer than two programs measured)."""
        if self.config.steps <= 0 or len(self.history.get(task, ())) < 2:
            return None

        def loss_at(_: int) -> torch.Tensor:
            inputs, labels, bounds = self._batch(task)
            return per_task_loss(lambdarank, self.model(*inputs), labels, bounds)

        self.model.train()
        loss_value = optimize(self.optimizer, self.config.steps, loss_at)
        self.model.eval()
        self.updates += 1
        return loss_value
