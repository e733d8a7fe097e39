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
    # Loaded again from its source, as a fresh process times PyTorch eager: the same program.
    assert model.source is not None and Path(model.source.model).is_absolute()
    again = model.source.load()
    torch.testing.assert_close(again.module(*model.inputs), model.module(*model.inputs))


def test_a_factory_file_and_a_zoo_name(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(
        "import torch\n"
        "def make():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(3, 2)), (torch.randn(5, 3),)\n"
        "def make_wide():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(3, 9)), (torch.randn(5, 3),)\n"
    )
    # Named after the function: two factories of one file tune into two libraries.
    model = load_model(f"{source}:make")
    assert model.name == "make" and tuple(model.inputs[0].shape) == (5, 3)
    assert model.source is not None and model.source.load().name == "make"
    assert load_model(f"{source}:make_wide").name == "make_wide"
    assert load_model(f"{source}:make", name="encoder-v2").name == "encoder-v2"
    for bad in ("../up", "a/b", ".hidden", ""):
        with pytest.raises(tcl.TclError, match="cannot name a library"):
            load_model(f"{source}:make", name=bad)
    zoo_model = load_model("bert_tiny", tiny=True)
    assert zoo_model.name == "bert_tiny" and zoo_model.inputs[0].dtype == torch.int64
    assert zoo_model.source is not None and zoo_model.source.tiny
    assert zoo_model.source.load().inputs[0].shape == zoo_model.inputs[0].shape
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
    assert module.source is None  # a Python object: no fresh process can load it again
    program = torch.export.export(TwoInputs(), (x, shift))
    exported = as_user_model(program, name="two")
    assert exported.name == "two" and exported.program is program
    torch.testing.assert_close(exported.module(x, shift), program.module()(x, shift))
    with pytest.raises(tcl.TclError, match="needs its example inputs"):
        as_user_model(TwoInputs())


def two_inputs_onnx(path: Path, batch: int | str = 4) -> tuple[Path, TwoInputs]:
    """TwoInputs written as ONNX by hand (MatMul, Add, Relu, Cast, Add), with its weights."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    torch.manual_seed(0)
    module = TwoInputs().eval()
    weight = module.linear.weight.detach().numpy().T.copy()
    bias = module.linear.bias.detach().numpy()
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Cast", ["shift"], ["s"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["r", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "two",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16]),
            helper.make_tensor_value_info("shift", TensorProto.INT64, [8]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        initializer=[numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return path, module


@pytest.mark.tvm
def test_an_onnx_model_loads_with_inputs_of_its_shapes(tmp_path: Path) -> None:
    import numpy as np
    import tvm
    from tvm import relax

    from tcl.tuning.latency import first_output

    path, module = two_inputs_onnx(tmp_path / "two.onnx")
    model = load_model(str(path))
    assert model.name == "two" and model.module is None and model.relax is not None
    assert [tuple(x.shape) for x in model.inputs] == [(4, 16), (8,)]
    assert model.inputs[1].dtype == torch.int64
    vm = relax.VirtualMachine(relax.build(model.relax, target="llvm"), tvm.cpu())
    got = first_output(vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in model.inputs]))
    expected = module(*model.inputs).detach().numpy()
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.tvm
def test_an_onnx_dynamic_dimension_is_refused_or_fixed_by_input_shapes(tmp_path: Path) -> None:
    path, _ = two_inputs_onnx(tmp_path / "dyn.onnx", batch="batch")
    with pytest.raises(tcl.TclError, match=r"input 0 \(x\) has a dynamic dimension 0"):
        load_model(str(path))
    model = load_model(str(path), shapes=[[2, 16], [8]])
    assert [tuple(x.shape) for x in model.inputs] == [(2, 16), (8,)]
    with pytest.raises(tcl.TclError, match="2 inputs, and 1 --input-shape given"):
        load_model(str(path), shapes=[[2, 16]])


def test_hostile_or_broken_onnx_files_are_one_line(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    path, _ = two_inputs_onnx(tmp_path / "two.onnx")
    (tmp_path / "text.onnx").write_text("not protobuf at all")
    with pytest.raises(tcl.TclError, match=r"text\.onnx: not a readable ONNX model"):
        load_model(str(tmp_path / "text.onnx"))
    # a weight stored "outside" the model's directory: never read
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 512)
    proto = onnx.load(str(path))
    weight = proto.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", "512")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    (tmp_path / "models").mkdir()
    onnx.save(proto, str(tmp_path / "models" / "escape.onnx"))
    with pytest.raises(tcl.TclError, match=r"tensor w is stored in '\.\./secret\.bin'"):
        load_model(str(tmp_path / "models" / "escape.onnx"))


def test_a_dynamic_pt2_is_exported_again_at_the_given_shapes(tmp_path: Path) -> None:
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(
        TwoInputs(), example(), dynamic_shapes={"x": {0: batch}, "shift": None}
    )
    torch.export.save(program, str(tmp_path / "dynamic.pt2"))
    model = load_model(str(tmp_path / "dynamic.pt2"), shapes=[[3, 16], [8]])
    assert [tuple(x.shape) for x in model.inputs] == [(3, 16), (8,)]
    assert model.inputs[1].dtype == torch.int64  # the program's own dtype, kept
    from tcl.tuning.user_models import check_static

    check_static(model.program, "re-exported")  # static now
    torch.testing.assert_close(model.module(*model.inputs), program.module()(*model.inputs))
    with pytest.raises(tcl.TclError, match=r"for \.pt2 and \.onnx models"):
        load_model("bert_tiny", shapes=[[1, 8]])


def relu_module(shape: list[object]) -> object:
    """A relax IRModule whose main is relu over one float32 input of ``shape``."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.relu(x)))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.tvm
def test_a_relax_module_is_checked_against_its_inputs() -> None:
    import numpy as np
    from tvm import tirx

    from tcl.tuning.user_models import as_user_model

    static = relu_module([2, 4])
    x = np.ones((2, 4), dtype="float32")
    model = as_user_model(static, (x,), name="relu")
    assert model.name == "relu" and model.module is None and model.relax is static
    assert isinstance(model.inputs[0], torch.Tensor)
    with pytest.raises(tcl.TclError, match="takes 1 inputs and 2 were given"):
        as_user_model(static, (x, x))
    with pytest.raises(tcl.TclError, match=r"shape \[2, 4\]; the example input has \[3, 4\]"):
        as_user_model(static, (np.ones((3, 4), dtype="float32"),))
    dynamic = relu_module([tirx.Var("n", "int64"), 4])
    with pytest.raises(tcl.TclError, match=r"input 0 \(x\) has a dynamic dimension 0"):
        as_user_model(dynamic, (x,))
