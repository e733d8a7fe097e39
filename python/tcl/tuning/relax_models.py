"""Models that come without PyTorch: an ONNX file (``tcl tune model.onnx``, TVM's relax ONNX
frontend) or a relax ``IRModule`` handed to :func:`tcl.tune`.

Either becomes a :class:`~tcl.tuning.user_models.UserModel` holding the relax module and example
inputs (torch tensors, as for every model); with no PyTorch module to compare with, a tuned build
is checked against the untuned build and timed beside it alone.

An ONNX file is protobuf data: reading it runs no code. Its tensors may live in external files;
those must lie inside the model's directory (no absolute path, no ``..``), so that a model from
someone else cannot make tcl read other files. Shapes must be static: a dimension the model
leaves open (``batch``, ``seq``) is fixed with ``--input-shape``, or the model is refused with the
input and the dimension to fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tcl.errors import TclError
from tcl.tuning.user_models import UserModel

_NO_ONNX = "ONNX models need the onnx package: pip install 'tcl[onnx]' (or onnx)"


def load_onnx(
    path: Path, shapes: Sequence[Sequence[int]] = (), dtypes: Sequence[str] = ()
) -> UserModel:
    """The ONNX model at ``path``, its inputs of the model's static shapes or of ``shapes`` (one
    per input, in order) and of its dtypes or ``dtypes``."""
    try:
        import onnx
    except ImportError:
        raise TclError(f"{path}: {_NO_ONNX}") from None
    if not path.is_file():
        raise TclError(f"{path}: no such file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # protobuf's DecodeError and friends
        raise TclError(f"{path}: not a readable ONNX model ({err})") from None
    _load_external_data(proto, path)
    return onnx_model(proto, path.stem, shapes, dtypes, where=str(path))


def _load_external_data(proto: Any, path: Path) -> None:
    """Reads the tensors stored beside the model, refusing any location outside its directory."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    base = path.resolve().parent
    for tensor in _all_tensors(proto):
        if not uses_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        where = (base / location).resolve()
        if Path(location).is_absolute() or base not in where.parents or not where.is_file():
            raise TclError(
                f"{path}: tensor {tensor.name} is stored in {location!r}, which is not a file "
                "inside the model's directory"
            )
    load_external_data_for_model(proto, str(base))


def _all_tensors(proto: Any) -> list[Any]:
    """Every tensor of the model: initializers and node attributes, subgraphs included."""
    out, graphs = [], [proto.graph]
    while graphs:
        graph = graphs.pop()
        out.extend(graph.initializer)
        for node in graph.node:
            for attribute in node.attribute:
                out.extend([attribute.t] if attribute.HasField("t") else [])
                out.extend(attribute.tensors)
                graphs.extend([attribute.g] if attribute.HasField("g") else [])
                graphs.extend(attribute.graphs)
    return out


def onnx_model(
    proto: Any,
    name: str,
    shapes: Sequence[Sequence[int]] = (),
    dtypes: Sequence[str] = (),
    *,
    where: str = "the ONNX model",
) -> UserModel:
    """A :class:`UserModel` of an ``onnx.ModelProto`` through TVM's relax ONNX frontend."""
    from onnx.helper import tensor_dtype_to_np_dtype
    from tvm.relax.frontend.onnx import from_onnx

    from tcl.zoo.extract import for_inference

    initializers = {t.name for t in proto.graph.initializer}
    graph_inputs = [i for i in proto.graph.input if i.name not in initializers]
    _check_counts(where, len(graph_inputs), shapes, dtypes)
    specs = []
    for k, value in enumerate(graph_inputs):
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        shape: list[int] = []
        for d, size in enumerate(list(shapes[k]) if shapes else dims):
            if size is None or size <= 0:
                raise TclError(
                    f"{where}: input {k} ({value.name}) has a dynamic dimension {d}; fix it "
                    "with --input-shape (one per input, e.g. --input-shape 1,3,224,224)"
                )
            shape.append(int(size))
        dtype = dtypes[k] if dtypes else str(tensor_dtype_to_np_dtype(tensor.elem_type))
        specs.append((value.name, shape, dtype))
    try:
        mod = from_onnx(
            proto,
            shape_dict={n: s for n, s, _ in specs},
            dtype_dict={n: t for n, _, t in specs},
            keep_params_in_input=False,
        )
    except Exception as err:  # the frontend raises many kinds for operators it lacks
        raise TclError(f"{where}: TVM's ONNX frontend cannot import it ({err})") from None
    return UserModel(
        name, None, example_inputs([(s, t) for _, s, t in specs]), relax=for_inference(mod)
    )


def relax_model(mod: Any, inputs: Sequence[Any], name: str = "model") -> UserModel:
    """A :class:`UserModel` of a relax ``IRModule`` whose ``main`` takes ``inputs`` (numpy
    arrays or torch tensors), its weights bound as constants."""
    from tvm import relax, tirx

    main = mod["main"] if "main" in _names(mod) else None
    if not isinstance(main, relax.Function):
        raise TclError("the IRModule has no relax function 'main' to tune")
    if len(main.params) != len(inputs):
        raise TclError(
            f"the IRModule's main takes {len(main.params)} inputs and {len(inputs)} were given "
            "(bind the weights first: relax.transform.BindParams)"
        )
    tensors = as_tensors(inputs)
    for k, (param, x) in enumerate(zip(main.params, tensors, strict=True)):
        shape, label = list(getattr(param.ty, "shape", None) or []), param.name
        for d, size in enumerate(shape):
            if not isinstance(size, tirx.IntImm):
                raise TclError(
                    f"the IRModule's input {k} ({label}) has a dynamic dimension {d}: "
                    "give main a static shape to tune it"
                )
        static = [int(s) for s in shape]
        if static != list(x.shape):
            raise TclError(
                f"the IRModule's input {k} ({label}) has shape {static}; the example "
                f"input has {list(x.shape)}"
            )
    return UserModel(name, None, tensors, relax=mod)


def as_tensors(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Inputs as torch tensors (numpy arrays are shared, not copied)."""
    import numpy as np
    import torch

    return tuple(
        x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x)) for x in inputs
    )


def example_inputs(specs: Sequence[tuple[Sequence[int], str]]) -> tuple[Any, ...]:
    """Inputs of the given shapes and dtypes: normal floats (seed 0), zeros for integers and
    booleans (valid token ids and indices)."""
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    out = []
    for shape, dtype in specs:
        kind = np.dtype(dtype)
        data = rng.standard_normal(shape) if kind.kind == "f" else np.zeros(shape)
        out.append(torch.from_numpy(np.ascontiguousarray(data.astype(kind))))
    return tuple(out)


def _check_counts(
    where: str, count: int, shapes: Sequence[Sequence[int]], dtypes: Sequence[str]
) -> None:
    for option, given in (("--input-shape", shapes), ("--dtype", dtypes)):
        if given and len(given) != count:
            raise TclError(f"{where}: {count} inputs, and {len(given)} {option} given")


def _names(mod: Any) -> list[str]:
    return [gv.name_hint for gv in mod.get_global_vars()]
