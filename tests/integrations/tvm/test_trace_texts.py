"""tcl.integrations.tvm.trace_texts: a batch's traces written by MetaSchedule's record writer are
the JSON of Python's reference twin (``reference_texts``), and tokenize the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tcl import model as models

pytestmark = pytest.mark.tvm


def _candidates(kind: str, seed: int) -> tuple[Any, list[Any]]:
    """A target and random programs of a matmul with a ReLU after it, or of a 3x3 convolution
    (tiles, vectorized and parallel loops, unrolling: the instructions a CPU's space has)."""
    import tvm
    from tvm import te, topi

    from tcl.integrations.tvm import measure as tm

    if kind == "matmul":
        a = te.placeholder((64, 48), name="A")
        k = te.reduce_axis((0, 48), name="k")
        c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * a[j, k], axis=k), name="C")
        out = te.compute((64, 64), lambda i, j: te.max(c[i, j], 0.0), name="D")
        args = [a, out]
    else:
        x = te.placeholder((1, 16, 14, 14), name="X")
        w = te.placeholder((32, 16, 3, 3), name="W")
        out = topi.nn.conv2d_nchw(x, w, stride=1, padding=1, dilation=1)
        args = [x, w, out]
    mod = tvm.IRModule({"main": te.create_prim_func(args)})
    target = tvm.target.Target({"kind": "llvm", "mcpu": "core-avx2", "num-cores": 2})
    return target, tm.random_candidates(mod, target, 12, seed)


@pytest.mark.parametrize("kind", ["matmul", "conv2d"])
def test_the_record_writer_writes_the_reference_json(kind: str) -> None:
    from tcl.integrations.tvm.trace_texts import reference_texts, trace_texts

    _, candidates = _candidates(kind, seed=1)
    assert len(candidates) > 1
    texts = trace_texts(candidates)
    assert len(texts) == len(candidates)
    for text, reference in zip(texts, reference_texts(candidates), strict=True):
        assert json.loads(text) == json.loads(reference)  # in order, the same JSON
        # byte for byte but for the booleans, which the writer writes as 1 and 0
        assert text == reference.replace("true", "1").replace("false", "0")
    assert trace_texts([]) == []


@pytest.mark.parametrize("kind", ["matmul", "conv2d"])
def test_candidates_tokenize_as_the_reference_text_does(kind: str, checkpoint: Path) -> None:
    """The scoring path's records (``candidate_records``) have the tokens of the same lines
    written with the reference twin's text, so the model scores a program alike either way."""
    from tcl.integrations.tvm.adapter import candidate_records
    from tcl.integrations.tvm.trace_texts import reference_texts

    target, candidates = _candidates(kind, seed=2)
    _, vocab, tokenizer, _ = models.load(checkpoint)
    fast = candidate_records(candidates, target, vocab, tokenizer)
    reference = candidate_records(candidates, target, vocab, tokenizer, reference_texts)
    assert len(fast) == len(reference) == len(candidates)
    np.testing.assert_array_equal(fast.lengths, reference.lengths)
    np.testing.assert_array_equal(fast.kinds, reference.kinds)
    np.testing.assert_array_equal(fast.fields, reference.fields)


def test_a_line_of_another_form_falls_back_to_the_reference_text() -> None:
    """A TVM that wrote its record lines otherwise would get the reference twin's text, not a
    cut at the wrong place."""
    from tcl.integrations.tvm import trace_texts as tt

    _, candidates = _candidates("matmul", seed=3)
    line = "[0,[" + tt.trace_texts(candidates[:1])[0] + ',null,null,null,"new field"]]'
    assert tt._trace_of(line, candidates[0]) == tt.reference_texts(candidates[:1])[0]


def test_without_a_temporary_folder_the_traces_are_converted_in_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tempfile

    from tcl.integrations.tvm import trace_texts as tt

    _, candidates = _candidates("matmul", seed=4)

    def unwritable(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", "/tmp/tcl-traces-x")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", unwritable)
    assert tt.trace_texts(candidates) == tt.reference_texts(candidates)
