"""Training a cost model on measured records: whole tasks per batch, a ranking loss, early
stopping on the validation top-1. Reads top to bottom."""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tcl.errors import TclError
from tcl.model import ModelConfig, build
from tcl.model.inputs import platform_inputs, platform_rows, predict, tensors
from tcl.progress import bar as progress_bar
from tcl.progress import write
from tcl.records import RecordSet, rows_by_task
from tcl.records.dataset import Dataset
from tcl.training.losses import LOSSES
from tcl.training.metrics import mean_task_topk


@dataclass(frozen=True)
class TrainConfig:
    loss: str = "lambdarank"
    lr: float = 2e-3
    weight_decay: float = 1e-4
    tasks_per_batch: int = 8
    programs_per_task: int = 64
    max_steps: int = 2000
    warmup_steps: int = 50
    eval_every: int = 100
    patience: int = 5  # evaluations without improvement before stopping
    seed: int = 0
    device: str = "cpu"  # or "cuda": the model trains there and comes back on the CPU
    # Each task's random programs are also ranked among themselves, as a group of their own: a
    # top-weighted loss over a task whose top is search-drawn programs gives their order little
    # weight, and a tuner's quick first round ranks random programs.
    rank_random_apart: bool = False


def task_groups(rs: RecordSet, random_apart: bool = False) -> list[np.ndarray]:
    """Row indices of every task with at least two records (something to rank); with
    ``random_apart``, also those of each task's random programs where the task has search-drawn
    ones too (read from a ``search/`` store, :func:`search_drawn`)."""
    groups = [rows for rows in rows_by_task(rs.columns["task"]) if len(rows) >= 2]
    if not random_apart:
        return groups
    drawn = search_drawn(rs)
    apart = [rows[~drawn[rows]] for rows in groups if drawn[rows].any()]
    return groups + [rows for rows in apart if len(rows) >= 2]


def search_drawn(rs: RecordSet) -> np.ndarray:
    """Per record: whether it was read from a search-drawn store (``tcl collect --search``
    writes them under ``search/``, or ``search-<layout>/``), not from a collection of random
    programs."""
    from tcl.tuning.collect_search import is_search_dir

    from_search = np.array([is_search_dir(Path(f).parent.name) for f in rs.files], dtype=bool)
    drawn: np.ndarray = from_search[rs.columns["file"]]
    return drawn


def draw_task_batch(
    rs: RecordSet,
    groups: list[np.ndarray],
    labels: torch.Tensor,
    tasks_per_batch: int,
    programs_per_task: int,
    rng: np.random.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    """A batch of a few whole tasks, a random subset of each one's programs: (kinds, fields,
    labels, bounds, rows), where task i's rows are ``bounds[i]:bounds[i+1]``."""
    chosen = rng.choice(len(groups), size=min(tasks_per_batch, len(groups)), replace=False)
    parts = [rng.permutation(groups[g])[:programs_per_task] for g in chosen]
    rows = np.concatenate(parts)
    kinds, fields = tensors(rs, rows)
    bounds = np.cumsum([0] + [len(p) for p in parts])
    return kinds, fields, labels[torch.from_numpy(rows)], bounds, rows


def per_task_loss(
    loss_fn: Any, scores: torch.Tensor, labels: torch.Tensor, bounds: np.ndarray
) -> torch.Tensor:
    """The mean over tasks of ``loss_fn`` within each task: programs of different tasks are
    never compared."""
    return torch.stack(
        [loss_fn(scores[a:b], labels[a:b]) for a, b in itertools.pairwise(bounds)]
    ).mean()


def centered_squared_error(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Squared error of one task's scores against target scores up to a shift: only their
    order and spacing matter, not the task's level."""
    return ((scores - scores.mean()) - (targets - targets.mean())).pow(2).mean()


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to zero at ``max_steps``."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.max_steps - config.warmup_steps)
    return config.lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def optimize(
    optimizer: torch.optim.Optimizer,
    steps: int,
    loss_at: Callable[[int], torch.Tensor],
    lr_at: Callable[[int], float] | None = None,
    after_step: Callable[[int, float], bool] | None = None,
    progress: str | None = None,
) -> float | None:
    """The optimizer loop of every trainer (train, transfer, distill, online): for each step,
    the learning rate ``lr_at(step)`` (kept when None), the caller's ``loss_at(step)``, its
    gradient clipped to norm 1, one optimizer step; ``after_step(step, loss)`` returning True
    stops early. Returns the last loss (None without steps). ``progress``: a bar of the steps
    on stderr, with this description (:mod:`tcl.progress`; none when None)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    loss_value = None
    with progress_bar(progress is not None, steps, progress or "", "step") as shown:
        for step in range(steps):
            loss_value = _step(optimizer, params, step, loss_at, lr_at)
            shown.set_postfix_str(f"loss {loss_value:.4f}", refresh=False)
            shown.update()
            if after_step is not None and after_step(step, loss_value):
                break
    return loss_value


def _step(
    optimizer: torch.optim.Optimizer,
    params: list[torch.Tensor],
    step: int,
    loss_at: Callable[[int], torch.Tensor],
    lr_at: Callable[[int], float] | None,
) -> float:
    """One optimizer step; returns its loss."""
    if lr_at is not None:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
    loss = loss_at(step)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]
    nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    return float(loss.item())


class _Best:
    """The best model state by validation top-1, and the evaluations since it last improved."""

    def __init__(self, model: nn.Module) -> None:
        self.score, self.state, self.stale = -1.0, copy.deepcopy(model.state_dict()), 0

    def offer(self, model: nn.Module, score: float) -> int:
        """Keeps ``model``'s state if ``score`` beats the best; returns the evaluations since
        the best."""
        if score > self.score:
            self.score, self.state, self.stale = score, copy.deepcopy(model.state_dict()), 0
        else:
            self.stale += 1
        return self.stale


def train(
    train_data: Dataset,
    val_data: Dataset | None,
    model_config: ModelConfig,
    config: TrainConfig | None = None,
    *,
    init: nn.Module | None = None,
    teacher: nn.Module | None = None,
    teacher_weight: float = 0.5,
    log: Any = write,
    progress: bool = False,
) -> tuple[nn.Module, dict[str, Any]]:
    """Trains ``model_config``'s model (from a copy of ``init`` when given: fine-tuning); returns
    the best model (by validation top-1) and the run's history. A model with a platform input
    learns each record under its own platform's descriptor: one model, several platforms.
    ``teacher`` (an ensemble, say) is distilled into it: its scores of the training records
    are targets beside the measurements, each task's scores matched up to a shift
    (:func:`centered_squared_error`), weighted ``teacher_weight`` against the ranking loss's
    ``1 - teacher_weight``. ``log`` takes a line per validation; ``progress`` shows a bar of the
    steps."""
    if not 0.0 <= teacher_weight <= 1.0:
        raise ValueError(f"teacher_weight must lie in [0, 1], got {teacher_weight}")
    config = config or TrainConfig()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    device = torch.device(config.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise TclError(f"training on {config.device}: PyTorch sees no CUDA GPU here")
    model = (build(model_config) if init is None else copy.deepcopy(init)).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    loss_fn = LOSSES[config.loss]

    rs = train_data.records
    labels = torch.from_numpy(rs.throughput()).float().to(device)  # best cost / this cost
    platform = platform_inputs(model, rs)
    platform = None if platform is None else platform.to(device)
    groups = task_groups(rs, config.rank_random_apart)
    if not groups:
        raise ValueError("no task has two measured programs to rank")
    # the teacher's scores, once: a target per training record, looked up by row
    taught = None if teacher is None else torch.from_numpy(predict(teacher, rs)).float().to(device)
    best = _Best(model)
    history: dict[str, Any] = {"config": asdict(config), "steps": [], "samples": 0}
    start = time.time()

    def loss_at(step: int) -> torch.Tensor:
        kinds, fields, y, bounds, rows = draw_task_batch(
            rs, groups, labels, config.tasks_per_batch, config.programs_per_task, rng
        )
        model.train()
        scores = model(kinds.to(device), fields.to(device), *platform_rows(platform, rows))
        history["samples"] += len(rows)
        if taught is None:
            return per_task_loss(loss_fn, scores, y, bounds)
        targets = taught[torch.from_numpy(rows).to(device)]
        return (1.0 - teacher_weight) * per_task_loss(
            loss_fn, scores, y, bounds
        ) + teacher_weight * per_task_loss(centered_squared_error, scores, targets, bounds)

    def validate(step: int, loss: float) -> bool:
        """Scores the validation set every ``eval_every`` steps; True stops (no gain lately)."""
        if val_data is None or (step + 1) % config.eval_every:
            return False
        score = mean_task_topk(val_data, predict(model, val_data.records), k=1)
        history["steps"].append({"step": step + 1, "loss": loss, "val_top1": score})
        log(
            f"step {step + 1:5d}  loss {loss:.4f}  val top-1 {score:.4f}  "
            f"{history['samples'] / (time.time() - start):,.0f} samples/s"
        )
        return best.offer(model, score) >= config.patience

    optimize(
        optimizer,
        config.max_steps,
        loss_at,
        lambda step: learning_rate(step, config),
        validate,
        "training" if progress else None,
    )
    if val_data is not None and best.score >= 0:
        model.load_state_dict(best.state)
    history.update(seconds=time.time() - start, best_val_top1=best.score)
    model.eval()
    return model.cpu(), history
