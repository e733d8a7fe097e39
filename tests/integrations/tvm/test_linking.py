"""tcl.integrations.tvm.linking: CPU candidates linked where they are built, against
MetaSchedule's tar of objects (the reference twin)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import matmul_module

pytest.importorskip("tvm")

LLVM = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}


def exp_module() -> Any:
    """A kernel that calls the C maths library (``expf``), as exact-math softmax does."""
    import tvm
    from tvm import te

    a = te.placeholder((64,), name="A", dtype="float32")
    b = te.compute((64,), lambda i: te.exp(a[i]) * 0.5, name="B")
    return tvm.IRModule({"main": te.create_prim_func([a, b])})


def built(mod: Any) -> Any:
    import tvm

    return tvm.tirx.build(mod, tvm.target.Target(LLVM))


def outputs(path: str, shapes: list[tuple[int, ...]]) -> np.ndarray:
    """What the library at ``path`` computes from fixed random inputs of ``shapes`` (its last
    argument is the output)."""
    import tvm

    rt_mod = tvm.runtime.load_module(path)
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.standard_normal(s).astype("float32")) for s in shapes]
    rt_mod["main"](*args)
    return np.asarray(args[-1].numpy())


@pytest.mark.parametrize(
    "make, shapes",
    [
        (lambda: matmul_module(16), [(16, 16), (16, 16), (16, 16)]),
        (exp_module, [(64,), (64,)]),
    ],
)
def test_a_linked_candidate_computes_what_the_tar_of_objects_does(
    make: Any, shapes: list[tuple[int, ...]]
) -> None:
    """The same object code linked by ``ld`` and by the runner's ``g++`` (MetaSchedule's tar):
    bit for bit the same outputs, also where the kernel calls ``expf``."""
    from tvm.s_tir.meta_schedule.builder.local_builder import default_export

    from tcl.integrations.tvm.linking import export_linked, linkable

    rt_mod = built(make())
    if not linkable(rt_mod):
        pytest.skip("no system linker (ld) on PATH")
    linked, reference = export_linked(rt_mod), default_export(rt_mod)
    assert linked.endswith(".so") and reference.endswith(".tar")
    np.testing.assert_array_equal(outputs(linked, shapes), outputs(reference, shapes))


def test_without_a_linker_or_when_the_link_fails_the_export_is_metaschedules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tcl.integrations.tvm import linking

    rt_mod = built(matmul_module(16))
    monkeypatch.setattr(linking, "linker", lambda: None)
    assert not linking.linkable(rt_mod)
    assert linking.export_linked(rt_mod).endswith(".tar")
    failing = tmp_path / "ld"
    failing.write_text("#!/bin/sh\necho 'ld: cannot find -lm' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(linking, "linker", lambda: str(failing))
    with pytest.raises(RuntimeError, match="ld -shared failed: ld: cannot find -lm"):
        linking.link_shared(str(tmp_path / "x.so"), [])
    made: list[str] = []
    mkdtemp = linking.tempfile.mkdtemp
    monkeypatch.setattr(linking.tempfile, "mkdtemp", lambda: made.append(mkdtemp()) or made[-1])
    assert linking.export_linked(rt_mod).endswith(".tar")
    assert made and not Path(made[0]).exists()  # the failed link's directory is gone


def test_a_builder_that_links_hands_the_runner_libraries_it_opens() -> None:
    """``PersistentLocalBuilder(link=True)``: the batch's artifacts are shared libraries and the
    runner measures every candidate."""
    import tvm

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.linking import linker

    if linker() is None:
        pytest.skip("no system linker (ld) on PATH")
    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 2, seed=0)
    builder = tm.PersistentLocalBuilder(max_workers=1, link=True)
    evaluator = tm.EvaluatorConfig(number=1, repeat=2, min_repeat_ms=0)
    runner = tm.make_runner(evaluator, 30.0, rpc=None, threads=1)
    try:
        batch = tm.build(builder, candidates, target)
        assert not batch.failures and batch.artifacts
        assert all(path.endswith(".so") for path in batch.artifacts)
        measured = tm.run(runner, batch)
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder, runner)
    assert len(measured) == len(candidates)
    assert all(m.run_secs and min(m.run_secs) > 0 for m in measured.values())
