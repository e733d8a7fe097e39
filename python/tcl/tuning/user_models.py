"""Models in the forms users have them, for ``tcl tune MODEL`` and :func:`tcl.tune`:

- a zoo network's name (``bert_tiny``),
- a ``torch.export`` program saved with ``torch.export.save`` (``model.pt2``), run on its own
  example inputs,
- a Python factory, ``path/to/file.py:make``: a function returning ``(module, example_inputs)``,
- an ONNX file (``model.onnx``) or, from Python, a relax ``IRModule`` (:mod:`relax_models`).

A ``.pt2`` is a file from someone else: it is checked before torch reads it, so that nothing in
it can run code (torch's loader falls back to unpickling objects it cannot read as tensors). A
factory is the user's own code and runs as such. Shapes must be static: a dynamic dimension is
refused with the input and the dimension to fix, unless the input shapes are given
(``--input-shape``, one per input: the program is then exported again at those shapes).
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcl.errors import TclError


@dataclass(frozen=True)
class EagerSource:
    """Where a model came from, so that a fresh process can load it again (:func:`load_model`'s
    arguments, file paths absolute): PyTorch eager is then timed under the same protocol as the
    builds (:mod:`tcl.tuning.isolated`)."""

    model: str
    tiny: bool = False
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()

    def load(self) -> UserModel:
        return load_model(self.model, tiny=self.tiny, shapes=self.shapes, dtypes=self.dtypes)


@dataclass
class UserModel:
    """A model to tune: its name, the PyTorch module (for eager timing and the reference
    output; None for a model that came without PyTorch), its example inputs (torch tensors),
    the exported program when it came as one, the relax module when it came as one, and where
    it came from when a fresh process can load it again (None for a Python object)."""

    name: str
    module: Any
    inputs: tuple[Any, ...]
    program: Any = None
    relax: Any = None
    source: EagerSource | None = None

    def relax_module(self) -> Any:
        """The model as a relax ``IRModule``: as it came, or imported from its exported program
        (exported now from its module where it came as one)."""
        from tcl.zoo.extract import export_program, import_program

        if self.relax is not None:
            return self.relax
        return import_program(self.program or export_program(self.module, self.inputs))


def load_model(
    spec: str,
    *,
    tiny: bool = False,
    shapes: Sequence[Sequence[int]] = (),
    dtypes: Sequence[str] = (),
    name: str | None = None,
) -> UserModel:
    """The model ``spec`` names: a zoo network, a ``.pt2`` or ``.onnx`` file or
    ``file.py:function``; ``shapes`` and ``dtypes`` (one per input, in order) fix the inputs of
    a ``.pt2`` or ``.onnx`` model. It is named ``name`` where given, else after the network,
    the file (``.pt2``, ``.onnx``) or the function (``file.py:function``)."""
    if name is not None:
        check_name(name)
    user = _load_spec(spec, tiny, shapes, dtypes)
    user.name = name or user.name
    return user


def _load_spec(
    spec: str, tiny: bool, shapes: Sequence[Sequence[int]], dtypes: Sequence[str]
) -> UserModel:
    from tcl import zoo

    if spec.endswith(".onnx"):
        from tcl.tuning.relax_models import load_onnx

        return load_onnx(Path(spec), shapes, dtypes)
    if spec.endswith(".pt2"):
        user = _load_pt2(Path(spec), shapes, dtypes)
        frozen = tuple(tuple(int(d) for d in shape) for shape in shapes)
        user.source = EagerSource(str(Path(spec).resolve()), False, frozen, tuple(dtypes))
        return user
    if shapes or dtypes:
        raise TclError(f"{spec}: --input-shape and --dtype are for .pt2 and .onnx models")
    if spec in zoo.NETWORKS:
        network = zoo.get(spec)
        example = zoo.example_input(network, tiny=tiny)
        return UserModel(
            spec, zoo.module(network, example), (example,), source=EagerSource(spec, tiny)
        )
    path, _, function = spec.rpartition(":")
    if path.endswith(".py") and function:
        user = from_factory(Path(path), function)
        user.source = EagerSource(f"{Path(path).resolve()}:{function}")
        return user
    raise TclError(
        f"{spec!r} is not a zoo network (`tcl zoo list`), a .pt2 or .onnx file or FILE.py:FUNCTION"
    )


def _load_pt2(path: Path, shapes: Sequence[Sequence[int]], dtypes: Sequence[str]) -> UserModel:
    """A ``.pt2`` program on its example inputs, or exported again at ``shapes``."""
    program = load_program(path, static=not (shapes or dtypes))
    inputs = tuple(program.example_inputs[0]) if program.example_inputs else ()
    if shapes or dtypes:
        from tcl.tuning.relax_models import example_inputs
        from tcl.zoo.extract import export_program

        count = len(shapes or dtypes)
        if inputs and count != len(inputs):
            raise TclError(f"{path}: {len(inputs)} inputs, and {count} shapes or dtypes given")
        specs = [
            (
                list(shapes[k]) if shapes else list(inputs[k].shape),
                dtypes[k] if dtypes else str(inputs[k].dtype).replace("torch.", ""),
            )
            for k in range(count)
        ]
        inputs = example_inputs(specs)
        program = export_program(program.module(), inputs)
    if not inputs:
        raise TclError(f"{path}: the program holds no example inputs to tune and time with")
    return UserModel(path.stem, _Eager(program), inputs, program)


class _Eager:
    """An exported program run eagerly, as PyTorch runs it (``ExportedProgram.module()``, which
    refuses ``eval()``: an export is already in inference form)."""

    def __init__(self, program: Any) -> None:
        self._run = program.module()

    def eval(self) -> _Eager:
        return self

    def __call__(self, *inputs: Any) -> Any:
        return self._run(*inputs)


def as_user_model(model: Any, example_inputs: Any = (), name: str | None = None) -> UserModel:
    """A :class:`UserModel` of what a Python caller has: a spec string (:func:`load_model`), a
    ``torch.export.ExportedProgram`` (its example inputs unless given), a ``torch.nn.Module``
    with its example inputs (one tensor or a tuple), a relax ``IRModule`` with its inputs
    (numpy arrays or tensors) or an ``onnx.ModelProto``."""
    import torch

    from tcl.tuning import relax_models

    inputs = (
        tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    )
    if isinstance(model, UserModel):
        return model
    if isinstance(model, str):
        return load_model(model, name=name)
    if name is not None:
        check_name(name)
    if isinstance(model, torch.export.ExportedProgram):
        check_static(model, name or "the program")
        if not inputs and model.example_inputs:
            inputs = tuple(model.example_inputs[0])
        return UserModel(name or "model", _Eager(model), inputs, model)
    if isinstance(model, torch.nn.Module):
        if not inputs:
            raise TclError("a torch.nn.Module needs its example inputs to be tuned")
        return UserModel(name or type(model).__name__.lower(), model, inputs)
    if type(model).__name__ == "IRModule":
        return relax_models.relax_model(model, inputs, name or "model")
    if type(model).__name__ == "ModelProto":
        shapes = [list(x.shape) for x in inputs]
        dtypes = [str(x.dtype).replace("torch.", "") for x in inputs]
        user = relax_models.onnx_model(model, name or model.graph.name or "model", shapes, dtypes)
        user.inputs = relax_models.as_tensors(inputs) if inputs else user.inputs
        return user
    raise TclError(f"cannot tune a {type(model).__name__}: give a module, a program or a path")


def from_factory(path: Path, function: str) -> UserModel:
    """Runs ``function()`` of the Python file ``path``: it returns (module, example_inputs)."""
    if not path.is_file():
        raise TclError(f"{path}: no such Python file")
    spec = importlib.util.spec_from_file_location(f"tcl_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise TclError(f"{path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, function, None)
    if not callable(factory):
        raise TclError(f"{path}: has no function {function!r}")
    made = factory()
    if not (isinstance(made, tuple) and len(made) == 2):
        raise TclError(f"{path}:{function} must return (module, example_inputs)")
    model, inputs = made
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    # Named after the function: two factories of one file tune into two libraries.
    return UserModel(function, model, inputs)


def check_name(name: str) -> None:
    """A model's name becomes a file name (``WORK_DIR/<name>.so``): letters, digits, ``_``,
    ``-`` and ``.`` only, not starting with a dot."""
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        raise TclError(
            f"{name!r} cannot name a library: use letters, digits, '_', '-' and '.' (not first)"
        )


def load_program(path: Path, *, static: bool = True) -> Any:
    """A ``torch.export`` program from ``path``, refused (one line) when anything in it would
    be unpickled rather than read as tensors, or (``static``) when its shapes are dynamic."""
    import torch

    if not path.is_file():
        raise TclError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as archive:
            for entry in archive.namelist():
                _check_entry(path, archive, entry)
    except zipfile.BadZipFile:
        raise TclError(f"{path}: not a torch.export program (.pt2 is a zip archive)") from None
    try:
        program = torch.export.load(str(path))
    except Exception as err:  # torch raises many kinds for a damaged archive
        raise TclError(f"{path}: not a readable torch.export program ({err})") from None
    if static:
        check_static(program, str(path))
    return program


def _check_entry(path: Path, archive: zipfile.ZipFile, entry: str) -> None:
    import torch

    if entry.endswith(".json") and ("weights_config" in entry or "constants_config" in entry):
        config = json.loads(archive.read(entry))
        for name, payload in dict(config.get("config", {})).items():
            if isinstance(payload, dict) and payload.get("use_pickle"):
                raise TclError(
                    f"{path}: {name} is stored as a pickle, which would run code when read; "
                    "tcl loads only plain tensors"
                )
    elif entry.endswith(".pt"):
        try:
            torch.load(io.BytesIO(archive.read(entry)), weights_only=True)
        except Exception:
            raise TclError(
                f"{path}: {entry} holds objects only an unpickler can read, which would run "
                "code; tcl loads only tensors"
            ) from None


def check_static(program: Any, where: str) -> None:
    """Refuses a program with a dynamic input dimension, naming it."""
    import torch

    user_inputs = set(program.graph_signature.user_inputs)
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    for k, node in enumerate(n for n in placeholders if n.name in user_inputs):
        value = node.meta.get("val")
        shape = getattr(value, "shape", ())
        for d, size in enumerate(shape):
            if isinstance(size, torch.SymInt):
                raise TclError(
                    f"{where}: input {k} ({node.name}) has a dynamic dimension {d}; give the "
                    "input shapes (--input-shape, one per input) or export it with static ones"
                )
