"""tcl tune end to end on a tiny network, guided by a tcl cost model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tcl
from tcl import model as models
from tcl.cli import main
from tcl.records import sample_data_path
from tcl.records.dataset import load_dataset
from tcl.training.train import TrainConfig, train
from tcl.tuning import platforms

pytestmark = pytest.mark.tvm


def test_tune_tiny_network_with_tcl_model(tmp_path: Path) -> None:
    from tcl.tuning.tune import tune_network

    data = load_dataset(sample_data_path())
    config = models.ModelConfig(vocab_size=len(data.records.vocab), d_model=16, n_layers=1)
    net, _ = train(data, None, config, TrainConfig(max_steps=20), log=lambda *a: None)
    checkpoint = tmp_path / "m.pt"
    models.save(checkpoint, net, data.records.vocab, data.records.tokenizer)
    report = tune_network(
        "bert_tiny",
        platforms.get("cpu-x86-64-1t"),
        12,
        tmp_path / "work",
        cost_model="tcl",
        model_path=str(checkpoint),
        tiny=True,
    )
    assert report.max_abs_error < 1e-4  # the tuned build computes what PyTorch computes
    assert report.latency_ms > 0 and report.untuned_ms > 0 and report.torch_ms > 0
    rs = tcl.read_records(tmp_path / "work")
    # The curve starts at the trial where every task has a measured program, then has a point
    # per trial; the best-so-far estimate can only go down, and times only grow.
    tasks = rs.columns["task"].tolist()
    all_seen = max(tasks.index(t) for t in set(tasks))
    assert len(rs) >= 12 and [c["trial"] for c in report.curve] == list(
        range(all_seen + 1, len(rs) + 1)
    )
    estimates = np.array([c["estimated_ms"] for c in report.curve])
    assert (np.diff(estimates) <= 1e-12).all()
    assert (np.diff([c["seconds"] for c in report.curve]) >= 0).all()
    # The bench's interleaved re-timing builds the same network from the same database.
    from tcl.tuning.latency import time_interleaved

    times = time_interleaved(
        "bert_tiny", platforms.get("cpu-x86-64-1t"), {"tcl": tmp_path / "work"}, rounds=2, tiny=True
    )
    assert set(times) == {"tcl", "torch"} and min(times.values()) > 0
    assert 0 < report.curve[-1]["seconds"] <= report.tune_seconds + 1


def test_cli_tune_refuses_cuda_without_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--network", "bert_tiny", "--platform", "cuda-a100", "--tiny"]) == 2
    assert "needs an NVIDIA GPU and none is visible here" in capsys.readouterr().err


def test_cli_tune_writes_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(
        [
            "tune",
            "--network",
            "bert_tiny",
            "--tiny",
            "--platform",
            "cpu-x86-64-1t",
            "--trials",
            "12",
            "--cost-model",
            "random",
            "--work-dir",
            str(tmp_path / "w"),
            "--population",
            "8",
            "--explore",
            "1",
            "--cold-cache",
            "--first-round",
            "1",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    options = report["options"]  # saved whole: every option of the run
    assert options["cost_model"] == "random" and report["tasks"] == 12 and report["curve"]
    assert options["population"] == 8 and options["cold_cache"] is True
    assert options["explore"] == 1 and options["trials"] == 12 and options["rpc"] is None
    assert options["first_round"] == 1
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_tune_measures_through_rpc_on_loopback(
    tmp_path: Path, rpc_loopback: tuple[str, int, str]
) -> None:
    from tcl.tuning.tune import tune_network

    report = tune_network(
        "bert_tiny",
        platforms.get("cpu-x86-64-1t"),
        12,
        tmp_path / "work",
        cost_model="tcl",
        tiny=True,
        rpc=rpc_loopback,
        cc="g++",
    )
    rs = tcl.read_records(tmp_path / "work")
    assert len(rs) >= 12 and (rs.columns["error"] == 0).all()
    assert report.max_abs_error < 1e-4 and report.curve
    # the builds were uploaded to the device and timed there
    assert report.builds_timed_on.startswith("device tcl-loopback (RPC tracker 127.0.0.1:")
    assert "builds on device tcl-loopback" in "\n".join(report.lines())


def test_a_pt2_program_tunes_into_a_library_that_stock_tvm_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    import torch
    from test_user_models import example, save_program

    program = save_program(tmp_path / "two.pt2")
    work = tmp_path / "work"
    args = ["tune", str(program), "--platform", "cpu-x86-64-1t", "--trials", "8"]
    assert main([*args, "--work-dir", str(work)]) == 0
    library = work / "two.so"
    assert library.is_file() and "tvm.runtime.load_module" in (work / "README.txt").read_text()
    x, shift = example()
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "shift.npy", shift.numpy())
    expected = torch.export.load(str(program)).module()(x, shift).detach().numpy()
    paths = [str(p) for p in (library, tmp_path / "x.npy", tmp_path / "shift.npy")]
    fresh = run_in_a_fresh_process(library, [tmp_path / "x.npy", tmp_path / "shift.npy"])
    np.testing.assert_allclose(fresh, expected, rtol=1e-5, atol=1e-5)
    out = tmp_path / "y.npy"
    assert (
        main(["run", str(library), "--input", paths[1], "--input", paths[2], "--output", str(out)])
        == 0
    )
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-5, atol=1e-5)
    # tcl bench: the library beside PyTorch eager, round by round
    capsys.readouterr()
    bench = ["bench", str(library), "--input", paths[1], "--input", paths[2], "--processes", "2"]
    assert main([*bench, "--model", str(program), "--threads", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == {"threads", "processes", "library", "torch"} and figures["threads"] == 1
    assert len(figures["library"]["samples_ms"]) == 2 and figures["torch"]["median_ms"] > 0
    assert main(bench) == 0
    text = capsys.readouterr().out
    assert "two.so" in text and "PyTorch" not in text and "2 fresh processes" in text


def test_a_resumed_work_directory_keeps_its_trials_and_adds_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_user_models import save_program

    from tcl.integrations.tvm import search

    program = save_program(tmp_path / "two.pt2")
    args = ["tune", str(program), "--platform", "cpu-x86-64-1t", "--cost-model", "random"]
    work = tmp_path / "work"
    assert main([*args, "--trials", "6", "--work-dir", str(work)]) == 0
    first = (work / "database_tuning_record.json").read_text().splitlines()
    learnt: list[int] = []  # each task's programs its cost model learnt before searching
    learn = search.learn_measured

    def learn_measured(*call: Any) -> int:
        learnt.append(learn(*call))
        return learnt[-1]

    monkeypatch.setattr(search, "learn_measured", learn_measured)
    assert main([*args, "--trials", "6", "--work-dir", str(work), "--learn-earlier"]) == 0
    both = (work / "database_tuning_record.json").read_text().splitlines()
    # the records read back from the work directory's database name the run's target
    ran = [r for r in map(json.loads, first) if max(r[1][1]) < 1e9]
    assert sum(learnt) == len(ran) > 0
    assert both[: len(first)] == first and len(both) >= len(first) + 6
    # no program measured twice: each trial of the second run is a new one
    programs = [(r[0], json.dumps(r[1][0])) for r in map(json.loads, both)]
    assert len(set(programs)) == len(programs)
    curve = json.loads((work / "report.json").read_text())["curve"]
    # Trials are numbered across both runs; the first run's are at 0 s of this one.
    assert curve[-1]["trial"] == len(both) and curve[0]["seconds"] == 0.0
    assert curve[-1]["seconds"] > 0


def run_in_a_fresh_process(library: Path, inputs: list[Path]) -> np.ndarray:
    """The library's first output on the .npy inputs, computed by a fresh process importing only
    tvm and numpy (stock TVM may load torch itself, never tcl): the library is all a deployment
    needs."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, tvm\n"
        "from tvm import relax\n"
        "vm = relax.VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())\n"
        "inputs = [tvm.runtime.tensor(np.load(p)) for p in sys.argv[2:-1]]\n"
        "out = vm['main'](*inputs)\n"
        "np.save(sys.argv[-1], (out if hasattr(out, 'numpy') else out[0]).numpy())\n"
        "assert not any(m.split('.')[0] == 'tcl' for m in sys.modules), 'tcl was imported'\n"
    )
    out = library.with_name("fresh.npy")
    run = subprocess.run(
        [sys.executable, "-c", code, str(library), *map(str, inputs), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return np.load(out)


def test_an_onnx_model_tunes_into_a_library_that_stock_tvm_runs(tmp_path: Path) -> None:
    from test_user_models import two_inputs_onnx

    path, module = two_inputs_onnx(tmp_path / "two.onnx", batch="batch")
    work = tmp_path / "work"
    shapes = ["--input-shape", "3,16", "--input-shape", "8"]
    args = ["tune", str(path), *shapes, "--platform", "cpu-x86-64-1t", "--trials", "8"]
    assert main([*args, "--work-dir", str(work)]) == 0
    report = json.loads((work / "report.json").read_text())
    assert report["torch_ms"] is None and set(report["samples_ms"]) == {"tuned", "untuned"}
    assert report["max_abs_error"] < 1e-4  # against the untuned build
    torch = pytest.importorskip("torch")
    x, shift = torch.randn(3, 16), torch.arange(8)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "shift.npy", shift.numpy())
    fresh = run_in_a_fresh_process(work / "two.so", [tmp_path / "x.npy", tmp_path / "shift.npy"])
    expected = module(x, shift).detach().numpy()
    np.testing.assert_allclose(fresh, expected, rtol=1e-5, atol=1e-5)


def test_a_relax_module_tunes_through_the_python_call(tmp_path: Path) -> None:
    from tvm import relax

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((16, 8)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 16], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.matmul(x, relax.const(weight)))
            out = bb.emit_output(bb.emit(relax.op.nn.relu(h)))
        bb.emit_func_output(out)
    data = rng.standard_normal((4, 16)).astype("float32")
    report = tcl.tune(
        bb.get(), (data,), platform="cpu-x86-64-1t", trials=8, work_dir=tmp_path / "w", name="dense"
    )
    assert report.library.endswith("dense.so") and report.torch_ms is None
    assert report.trials == 8 and report.curve
    np.save(tmp_path / "x.npy", data)
    fresh = run_in_a_fresh_process(Path(report.library), [tmp_path / "x.npy"])
    np.testing.assert_allclose(fresh, np.maximum(data @ weight, 0), rtol=1e-4, atol=1e-4)


def test_a_droplet_pass_takes_the_last_trials_and_the_library_stays_right(
    tmp_path: Path,
) -> None:
    """``post_opt``: the search measures the trials less the pass's, then Droplet walks from the
    best program; what it measured is in the database the library is built from, and the
    library still computes the network."""
    from tvm import relax

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((64, 64)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([32, 64], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.matmul(x, relax.const(weight))))
        bb.emit_func_output(out)
    data = rng.standard_normal((32, 64)).astype("float32")
    work = tmp_path / "w"
    report = tcl.tune(
        bb.get(),
        (data,),
        platform="cpu-x86-64-1t",
        trials=8,
        post_opt=4,
        work_dir=work,
        name="mm",
        rounds=1,
    )
    # One task: the search's 4 trials, then up to 4 of Droplet's.
    assert 4 < report.measured <= 8 and len(tcl.read_records(work)) == report.measured
    assert report.options["post_opt"] == 4
    assert "the last 4 to Droplet's post-optimization" in report.lines()[0]
    np.save(tmp_path / "x.npy", data)
    fresh = run_in_a_fresh_process(Path(report.library), [tmp_path / "x.npy"])
    np.testing.assert_allclose(fresh, data @ weight, rtol=1e-4, atol=1e-4)


def test_a_factory_file_tunes_into_a_library_that_stock_tvm_runs(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    net = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh())\n"
        "    return net, (torch.randn(2, 16),)\n"
    )
    work = tmp_path / "work"
    args = ["tune", f"{source}:make", "--platform", "cpu-x86-64-1t", "--trials", "6"]
    assert main([*args, "--work-dir", str(work), "--cost-model", "random"]) == 0
    import torch

    namespace: dict[str, object] = {}
    exec(source.read_text(), namespace)  # the test's own file, as the factory ran it
    net, (x,) = namespace["make"]()  # type: ignore[operator]
    np.save(tmp_path / "x.npy", x.numpy())
    with torch.no_grad():
        expected = net(x).numpy()
    # Named after the function (two factories of one file would overwrite one library).
    fresh = run_in_a_fresh_process(work / "make.so", [tmp_path / "x.npy"])
    np.testing.assert_allclose(fresh, expected, rtol=1e-5, atol=1e-5)


def _tiny_bert_under(
    deadline: type, trials: int, work: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """The report of a tiny BERT-tiny tuned under a 10-minute budget whose deadline is
    ``deadline`` (a ``Deadline`` that decides when it passes), random picks."""
    from tcl.integrations.tvm import deadline as deadlines
    from tcl.tuning import platforms
    from tcl.tuning.tune import tune_network

    monkeypatch.setattr(deadlines, "Deadline", deadline)
    platform = platforms.get("cpu-x86-64-1t")
    return tune_network(
        "bert_tiny", platform, trials, work, tiny=True, cost_model="random",
        population=8, minutes=10, progress=False,
    )  # fmt: skip


def test_a_time_budget_ends_the_search_while_the_scheduler_weighs_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget runs out after the first round, when MetaSchedule's gradient scheduler picks
    tasks by their gains: each task it picks then ends (retiring them all at once from a
    measure callback made it pick a retired task and fail)."""
    from tcl.integrations.tvm.deadline import Deadline

    class AfterTheFirstRound(Deadline):
        calls = 0

        def passed(self) -> bool:  # every task's first round, then three rounds more
            AfterTheFirstRound.calls += 1
            return AfterTheFirstRound.calls > 12 + 3

    report = _tiny_bert_under(AfterTheFirstRound, 96, tmp_path / "w", monkeypatch)
    assert report.tasks == 12 and 12 * 2 < report.measured < 96, report.measured


def test_a_round_being_built_when_the_budget_ends_keeps_only_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline passes while later rounds are being built: their builds are not started
    and the database keeps none of their programs (a resumed run measures them still), while
    every task's first round, which the builder is never told to stop, is built and kept."""
    from tcl.integrations.tvm.deadline import Deadline
    from tcl.records import read_records

    cut: list[int] = []

    class PassedWhileBuilding(Deadline):
        def passed(self) -> bool:  # the search goes on; every build after a first round stops
            return False

        def builds_until(self) -> float | None:
            if not self.binding:
                return None
            cut.append(1)
            return 0.0  # long past

    report = _tiny_bert_under(PassedWhileBuilding, 48, tmp_path / "w", monkeypatch)
    records = read_records(tmp_path / "w")
    assert report.tasks == 12 and len(cut) > 0  # later rounds were handed out, and cut
    assert len(set(records.columns["task"])) == 12  # each task's first round
    assert report.measured == len(records) <= 12 * 2
    # no unbuilt program kept as a failed one (MetaSchedule stores those at 1e10 s)
    assert all(records.costs_of(i).max() < 1.0 for i in range(len(records)))


def test_a_time_budget_ends_the_search(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["tune", "--network", "bert_tiny", "--tiny", "--platform", "cpu-x86-64-1t"]
    # 3 seconds: the search stops after the round that passes them, long before 1,024 trials.
    args += ["--minutes", "0.05", "--cost-model", "random", "--work-dir", str(tmp_path / "w")]
    assert main([*args, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["options"]["minutes"] == 0.05 and report["options"]["trials"] == 1024
    assert 0 < report["measured"] < 1024
    assert main([*args[:-4], "--minutes", "0"]) == 2  # refused before any work


def test_tune_warns_a_python_caller_when_the_library_computes_something_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from tcl.tuning import tune as tuning
    from tcl.tuning.report import OutputCheck

    from conftest import checked_report

    reference = np.ones(4)

    net, inputs = torch.nn.Linear(4, 2), (torch.zeros(1, 4),)
    right = checked_report(OutputCheck.of(reference, reference, reference))
    monkeypatch.setattr(tuning, "tune_model", lambda *args: right)
    assert tcl.tune(net, inputs, trials=1, work_dir=tmp_path) is right  # no warning: they pass
    wrong = checked_report(OutputCheck.of(reference * 5, reference, reference))
    monkeypatch.setattr(tuning, "tune_model", lambda *args: wrong)
    with pytest.warns(RuntimeWarning, match="a tuned kernel computes something else"):
        assert tcl.tune(net, inputs, trials=1, work_dir=tmp_path) is wrong
