"""tcl.integrations.tvm.mlp_state: MetaSchedule's MLP saved and loaded without pickle; hostile
files are refused before anything in them runs."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from tcl.errors import TclError

pytestmark = pytest.mark.tvm


def _model_with_data() -> object:
    from tcl.integrations.tvm.patches import fixed_mlp_model

    model = fixed_mlp_model()
    rng = np.random.default_rng(0)
    for g in range(3):
        features = [rng.standard_normal((int(n), 172)).astype(np.float32) for n in (2, 5, 1)]
        model.trainer.state.add_to_group(features, rng.random(3), f"hash{g}")
    return model


def test_round_trip_keeps_weights_and_data(tmp_path: Path) -> None:
    from tcl.integrations.tvm.mlp_state import load_mlp, save_mlp
    from tcl.integrations.tvm.patches import fixed_mlp_model

    model = _model_with_data()
    save_mlp(model, tmp_path / "mlp.npz")
    loaded = fixed_mlp_model()
    load_mlp(loaded, tmp_path / "mlp.npz")
    a, b = model.trainer.state, loaded.trainer.state  # type: ignore[attr-defined]
    for (name, x), (other, y) in zip(
        a.model.state_dict().items(), b.model.state_dict().items(), strict=True
    ):
        assert name == other and torch.equal(x, y)
    assert list(a.data) == list(b.data) and b.data_size == a.data_size == 9
    for key in a.data:
        assert np.array_equal(a.data[key].costs, b.data[key].costs)
        for f, g in zip(a.data[key].features, b.data[key].features, strict=True):
            assert np.array_equal(f, g)


class _Payload:
    """Unpickling this creates a file: the proof that a file's code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (os.system, (f"touch {self.marker}",))


def test_pickled_arrays_and_metaschedule_tars_are_refused_without_running(tmp_path: Path) -> None:
    from tcl.integrations.tvm.mlp_state import FORMAT, load_mlp
    from tcl.integrations.tvm.patches import fixed_mlp_model

    marker = tmp_path / "code-ran"
    hostile = tmp_path / "hostile.npz"
    payload = np.empty(1, dtype=object)
    payload[0] = _Payload(marker)
    np.savez(hostile, format=np.array(FORMAT), **{"groups/0/hash": payload})
    with pytest.raises(TclError, match="refused, it holds pickled objects"):
        load_mlp(fixed_mlp_model(), hostile)
    assert not marker.exists()

    tar = tmp_path / "metaschedule.tar"
    _model_with_data().trainer.state.save(str(tar))  # type: ignore[attr-defined]
    assert tarfile.is_tarfile(tar)
    with pytest.raises(TclError, match=r"MetaSchedule.s MLP format .* runs code when loaded"):
        load_mlp(fixed_mlp_model(), tar)
    text = tmp_path / "notes.npz"
    text.write_text("hello")
    with pytest.raises(TclError, match="not a tcl MLP state"):
        load_mlp(fixed_mlp_model(), text)
