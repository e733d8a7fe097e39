"""Model inputs from records: token tensors, each record's platform descriptor when the model
reads one, batches of similar length, and scoring (``predict``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import torch
from torch import nn

from tcl.model.common import ModelConfig, SequenceCostModel
from tcl.model.ensemble import Ensemble
from tcl.progress import bar as progress_bar
from tcl.records import RecordSet
from tcl.tuning.platforms import per_record_descriptors


def tensors(rs: RecordSet, rows: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(kinds int64 (n, L), fields float32 (n, L, F)) of the given rows, cut to the longest of
    them: every model is causal or masks padding, so trailing padding only costs time."""
    sub = rs if rows is None else rs.select(rows)
    length = max(1, int(sub.lengths.max())) if len(sub) else 1
    kinds = torch.from_numpy(sub.kinds[:, :length].astype(np.int64))
    return kinds, torch.from_numpy(np.ascontiguousarray(sub.fields[:, :length]))


def reads_platform(model: nn.Module) -> bool:
    """Whether ``model`` takes a platform descriptor with its inputs (one bound to a platform by
    ``ForPlatform`` does not: it brings its own)."""
    return isinstance(model, (SequenceCostModel, Ensemble)) and model.config.platform_features > 0


def platform_inputs(model: nn.Module, rs: RecordSet) -> torch.Tensor | None:
    """Every record's platform descriptor when ``model`` reads one, else None."""
    return torch.from_numpy(per_record_descriptors(rs)) if reads_platform(model) else None


def platform_rows(platform: torch.Tensor | None, rows: np.ndarray) -> tuple[torch.Tensor, ...]:
    """The extra model input of a batch: its rows' descriptors, or nothing."""
    return () if platform is None else (platform[torch.from_numpy(rows).to(platform.device)],)


def device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s weights are (its inputs go there too); the CPU for a model without."""
    first = next(model.parameters(), None)
    return torch.device("cpu") if first is None else first.device


def length_sorted_batches(
    model: nn.Module, rs: RecordSet, batch_size: int = 512
) -> Iterator[tuple[np.ndarray, tuple[torch.Tensor, ...]]]:
    """(rows, model inputs) of batches of records of similar length, so that little time goes to
    padding; the inputs include each record's platform descriptor when ``model`` reads one, and
    are on ``model``'s device."""
    device = device_of(model)
    platform = platform_inputs(model, rs)
    order = np.argsort(rs.lengths, kind="stable")
    for start in range(0, len(rs), batch_size):
        rows = order[start : start + batch_size]
        batch = (*tensors(rs, rows), *platform_rows(platform, rows))
        yield rows, tuple(x.to(device) for x in batch)


@torch.no_grad()
def predict(
    model: nn.Module, rs: RecordSet, batch_size: int = 512, *, progress: bool = False
) -> np.ndarray:
    """Scores (float64, larger = faster) for every record, in eval mode; a record's score does
    not depend on its batch. Moderate batches of similar length keep activations in cache and
    under glibc's mmap threshold (Mamba, 2 cores, quiet: 17.7k candidates/s at 128, 21.2k at
    512, 19.0k at 1024; the old 2048 gave 14k on one core). ``progress``: a bar of the records
    scored."""
    model.eval()
    out = np.zeros(len(rs))
    with progress_bar(progress, len(rs), "scoring", "record") as shown:
        for rows, inputs in length_sorted_batches(model, rs, batch_size):
            out[rows] = model(*inputs).double().cpu().numpy()
            shown.update(len(rows))
    return out


@torch.no_grad()
def predict_with_embeddings(
    model: nn.Module, rs: RecordSet, batch_size: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """``predict``'s scores and every record's embedding (float64 (n, width)), from one pass."""
    model.eval()
    scores, embeddings = np.zeros(len(rs)), None
    for rows, inputs in length_sorted_batches(model, rs, batch_size):
        batch_scores, batch_embeddings = model.score_and_embed(*inputs)  # type: ignore[operator]
        if embeddings is None:
            embeddings = np.zeros((len(rs), batch_embeddings.shape[1]))
        scores[rows] = batch_scores.double().cpu().numpy()
        embeddings[rows] = batch_embeddings.double().cpu().numpy()
    return scores, np.zeros((0, 0)) if embeddings is None else embeddings


def calibrated_ensemble(members: Sequence[nn.Module], rs: RecordSet) -> Ensemble:
    """Models of one shape as one :class:`Ensemble`, each member standardized by its scores on
    ``rs`` (the records it learnt from)."""
    config: ModelConfig = members[0].config  # type: ignore[assignment]
    ensemble = Ensemble(replace(config, members=len(members)), members)
    ensemble.calibrate(torch.from_numpy(np.stack([predict(m, rs) for m in members])))
    return ensemble
