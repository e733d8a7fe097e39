"""A pickle-free file format for MetaSchedule's MLP cost model (the TenSet-MLP port).

MetaSchedule's own ``MLPModel.save`` writes a tar holding ``np.save`` of an object array, and its
``load`` reads it with ``np.load(allow_pickle=True)``: loading a file from someone else can run
their code. tcl saves and loads the MLP's state as one ``.npz`` of plain numeric and string
arrays instead — the network's weights, and per workload group its hash, the concatenated
per-store feature rows with each candidate's row count, and the costs — read with
``allow_pickle=False``, and refuses MetaSchedule's format with a message that says why.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from tcl.errors import TclError

FORMAT = "tcl-mlp-state-1"


def save_mlp(model: Any, path: str | Path) -> None:
    """Writes ``model`` (a MetaSchedule ``MLPModel``) to ``path`` (.npz)."""
    state = model.trainer.state
    arrays: dict[str, np.ndarray] = {"format": np.array(FORMAT)}
    for name, tensor in state.model.state_dict().items():
        arrays[f"weights/{name}"] = tensor.detach().cpu().numpy()
    for i, group in enumerate(state.data.values()):
        features = [np.asarray(f, dtype=np.float32) for f in group.features]
        arrays[f"groups/{i}/hash"] = np.array(str(group.group_hash))
        arrays[f"groups/{i}/rows"] = np.array([len(f) for f in features], dtype=np.int64)
        arrays[f"groups/{i}/features"] = (
            np.concatenate(features) if features else np.zeros((0, 0), np.float32)
        )
        arrays[f"groups/{i}/costs"] = np.asarray(group.costs, dtype=np.float64)
    with open(path, "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]


def load_mlp(model: Any, path: str | Path) -> None:
    """Reads a state written by :func:`save_mlp` into ``model``; refuses anything else (a
    MetaSchedule tar, an array that would need unpickling) with a :class:`TclError`."""
    import torch
    from tvm.s_tir.meta_schedule.cost_model.mlp_model import FeatureGroup

    path = Path(path)
    if tarfile.is_tarfile(path):
        raise TclError(
            f"{path}: MetaSchedule's MLP format (a tar with pickled arrays), which runs code when "
            "loaded; tcl reads only its own .npz (tcl.integrations.tvm.mlp_state.save_mlp)"
        )
    if not zipfile.is_zipfile(path):
        raise TclError(f"{path}: not a tcl MLP state (.npz)")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except ValueError as err:  # an object array: it would need unpickling
        raise TclError(f"{path}: refused, it holds pickled objects ({err})") from None
    if str(arrays.get("format", "")) != FORMAT:
        raise TclError(f"{path}: not a tcl MLP state (format {FORMAT!r} expected)")
    state = model.trainer.state
    weights = {
        k[len("weights/") :]: torch.from_numpy(v)
        for k, v in arrays.items()
        if k.startswith("weights/")
    }
    try:
        state.model.load_state_dict(weights)
    except RuntimeError as err:
        raise TclError(f"{path}: its weights do not fit MetaSchedule's MLP ({err})") from None
    groups = sorted({int(k.split("/")[1]) for k in arrays if k.startswith("groups/")})
    for i in groups:
        rows, costs = arrays[f"groups/{i}/rows"], arrays[f"groups/{i}/costs"]
        features = np.split(arrays[f"groups/{i}/features"], np.cumsum(rows)[:-1])
        if len(features) != len(costs):
            raise TclError(f"{path}: group {i} has {len(features)} candidates, {len(costs)} costs")
        group_hash = str(arrays[f"groups/{i}/hash"])
        state.data[group_hash] = FeatureGroup(group_hash, list(features), costs)
        state.data_size += len(costs)
        state.untrained_size += len(costs)
