"""tcl.tuning.user_models: models given as a zoo name, a torch.export program or a Python factory; a
.pt2 that would unpickle and one with dynamic shapes are refused in one line."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import torch

import tcl
from tcl.tuning.user_models import load_model


class TwoInputs(torch.nn.Module):
    """Two inputs (one of them integer), a matmul and an elementwise tail."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) + shift.float()


def example() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(4, 16), torch.arange(8, dtype=torch.int64)


def save_program(path: Path) -> Path:
    torch.export.save(torch.export.export(TwoInputs(), example()), str(path))
    return path


def test_a_pt2_program_loads_with_its_example_inputs(tmp_path: Path) -> None:
    model = load_model(str(save_program(tmp_path / "two.pt2")))
    assert model.name == "two" and model.program is not None
    assert [tuple(x.shape) for x in model.inputs] == [(4, 16), (8,)]
    assert model.inputs[1].dtype == torch.int64
    torch.testing.assert_close(model.module(*model.inputs), model.program.module()(*example()))


def test_a_factory_file_and_a_zoo_name(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(
        "import torch\n"
        "def make():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(3, 2)), (torch.randn(5, 3),)\n"
    )
    model = load_model(f"{source}:make")
    assert model.name == "mine" and tuple(model.inputs[0].shape) == (5, 3)
    zoo_model = load_model("bert_tiny", tiny=True)
    assert zoo_model.name == "bert_tiny" and zoo_model.inputs[0].dtype == torch.int64
    with pytest.raises(tcl.TclError, match="has no function 'nothing'"):
        load_model(f"{source}:nothing")


def _with_entry(src: Path, dst: Path, suffix: str, data: bytes) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, data if item.filename.endswith(suffix) else zin.read(item))
    return dst


class _RunsCode:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("this would have run",))


def test_a_pt2_that_would_unpickle_is_refused_before_torch_reads_it(tmp_path: Path) -> None:
    good = save_program(tmp_path / "good.pt2")
    payload = io.BytesIO()
    torch.save({"x": _RunsCode()}, payload, _use_new_zipfile_serialization=True)
    crafted = _with_entry(good, tmp_path / "crafted.pt2", ".pt", payload.getvalue())
    with pytest.raises(tcl.TclError, match="only an unpickler can read"):
        load_model(str(crafted))
    config = {"config": {"linear.weight": {"path_name": "weight_0", "use_pickle": True}}}
    weights = "model_weights_config.json"
    pickled = _with_entry(good, tmp_path / "pickled.pt2", weights, json.dumps(config).encode())
    with pytest.raises(tcl.TclError, match="stored as a pickle"):
        load_model(str(pickled))
    (tmp_path / "text.pt2").write_text("not a zip")
    with pytest.raises(tcl.TclError, match=r"not a torch\.export program"):
        load_model(str(tmp_path / "text.pt2"))


def test_dynamic_shapes_are_refused_naming_the_dimension(tmp_path: Path) -> None:
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(
        TwoInputs(), example(), dynamic_shapes={"x": {0: batch}, "shift": None}
    )
    torch.export.save(program, str(tmp_path / "dynamic.pt2"))
    with pytest.raises(tcl.TclError, match=r"input 0 \(x\) has a dynamic dimension 0"):
        load_model(str(tmp_path / "dynamic.pt2"))


def test_what_a_python_caller_has_becomes_a_model(tmp_path: Path) -> None:
    from tcl.tuning.user_models import as_user_model

    x, shift = example()
    module = as_user_model(TwoInputs(), (x, shift))
    assert module.name == "twoinputs" and module.program is None and len(module.inputs) == 2
    program = torch.export.export(TwoInputs(), (x, shift))
    exported = as_user_model(program, name="two")
    assert exported.name == "two" and exported.program is program
    torch.testing.assert_close(exported.module(x, shift), program.module()(x, shift))
    with pytest.raises(tcl.TclError, match="needs its example inputs"):
        as_user_model(TwoInputs())
