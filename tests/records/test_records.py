"""Reading real records: both formats, every input form, threads, the Python twin, RecordSet."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.records.reference import read_records_reference

from conftest import assert_same_records


def test_real_ansor_logs_cpu_and_cuda(ansor_dir: Path) -> None:
    rs = tcl.read_records(ansor_dir)
    # 26 + 24 + 3 x 1 records; the comment lines are not records.
    assert len(rs) == 53
    assert rs.report.skipped == {}
    assert any(t.startswith("cuda") for t in rs.targets)
    assert any(t.startswith("llvm") for t in rs.targets)
    keys = [json.loads(k) for k in rs.tasks.workload_key]
    assert any(isinstance(k[1], int) for k in keys)  # flat TenSet-style keys
    assert any(isinstance(k[1], list) for k in keys)  # nested keys of newer TVM
    assert (rs.columns["error"] == 0).all()
    # Every Ansor step kind that occurs is a known kind.
    assert rs.report.unknown_kinds == {}


def test_ansor_values_match_the_file(ansor_dir: Path) -> None:
    path = ansor_dir / "matmul.json"
    record = json.loads(path.read_text().splitlines()[1])
    rs = tcl.read_records(path)
    assert len(rs) == 1
    assert rs.tasks.workload_key == [record["i"][0][0]]
    assert rs.targets == [record["i"][0][1]]
    assert rs.tasks.hardware_params[0].tolist() == record["i"][0][2]
    np.testing.assert_array_equal(rs.costs_of(0), record["r"][0])
    assert rs.columns["mean_cost"][0] == pytest.approx(np.mean(record["r"][0]))
    assert rs.columns["timestamp"][0] == record["r"][3]
    assert rs.columns["line"][0] == 2
    steps = record["i"][1][1]
    assert rs.columns["num_steps"][0] == len(steps) == rs.lengths[0]
    kinds = [rs.vocab.kinds[i] for i in rs.kinds[0, : len(steps)]]
    assert kinds[0] == "SP" and kinds[4] == "FSP" and kinds[9] == "AN:parallel"
    assert kinds[10] == "PR:auto_unroll_max_step" and kinds[11] == "AN:vectorize"
    # ["SP", 2, 0, 1024, [2, 1, 4], 1]: numbers in order, log2(1 + x)-scaled.
    _, stage, iterator, extent, tiles, inner = steps[0]
    numbers = [stage, iterator, extent, *tiles, inner]
    expected = np.log2(1 + np.array(numbers, dtype=np.float64)).astype(np.float32)
    np.testing.assert_array_equal(rs.fields[0, 0, : len(numbers)], expected)
    assert (rs.fields[0, 0, len(numbers) :] == 0).all()
    # ["PR", 2, 0, "auto_unroll_max_step$8"]: the pragma value is a number.
    _, stage, iterator, pragma = steps[10]
    value = float(pragma.split("$")[1])
    np.testing.assert_array_equal(
        rs.fields[0, 10, :3], np.log2(1 + np.array([stage, iterator, value])).astype(np.float32)
    )


def test_twin_agrees_on_real_ansor_logs(ansor_dir: Path) -> None:
    assert_same_records(tcl.read_records(ansor_dir), read_records_reference(ansor_dir))


def test_thread_count_and_chunking_do_not_change_the_result(
    ansor_lines: list[bytes], tmp_path: Path
) -> None:
    # ~2.5 MB in two files: several chunks per file, so merging and line numbers are exercised.
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_bytes(b"\n".join(ansor_lines * 40) + b"\n")
    one = tcl.read_records(tmp_path, num_threads=1)
    two = tcl.read_records(tmp_path, num_threads=2)
    four = tcl.read_records(tmp_path, num_threads=4)
    assert len(one) == 2 * 40 * len(ansor_lines)
    assert_same_records(one, two)
    assert_same_records(one, four)
    assert one.columns["line"][-1] == 40 * len(ansor_lines)
    assert_same_records(one, read_records_reference(tmp_path))


def test_gzip_glob_and_directory_inputs(ansor_dir: Path, tmp_path: Path) -> None:
    plain = tcl.read_records(ansor_dir / "resnet-50-NHWC-B1-llvm.json")
    gz = tmp_path / "resnet.json.gz"
    gz.write_bytes(gzip.compress((ansor_dir / "resnet-50-NHWC-B1-llvm.json").read_bytes()))
    from_gz = tcl.read_records(gz)
    assert len(from_gz) == len(plain) == 26
    np.testing.assert_array_equal(from_gz.kinds, plain.kinds)
    globbed = tcl.read_records(str(ansor_dir / "resnet-*.json"))
    assert len(globbed) == 50
    assert len(tcl.read_records([ansor_dir, ansor_dir / "matmul.json"])) == 53  # each file once


def test_missing_inputs_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        tcl.read_records(tmp_path / "nothing-here.json")
    with pytest.raises(FileNotFoundError, match="no file matches"):
        tcl.read_records(str(tmp_path / "*.json"))
    (tmp_path / "database_tuning_record.json").write_text("")
    with pytest.raises(FileNotFoundError, match="workload file"):
        tcl.read_records(tmp_path / "database_tuning_record.json")


def test_save_load_round_trip(ansor_dir: Path, tmp_path: Path) -> None:
    rs = tcl.read_records(ansor_dir)
    rs.tasks.flops[0] = 1.5e9
    rs.save(tmp_path / "rs.tcl")
    back = tcl.RecordSet.load(tmp_path / "rs.tcl")
    assert back.report == tcl.records.ReadReport()  # a report describes a read, not the data
    back.report = rs.report
    assert_same_records(rs, back)
    assert back.tasks.flops[0] == 1.5e9 and np.isnan(back.tasks.flops[1])


def test_load_rejects_other_and_truncated_files(ansor_dir: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(tcl.FormatVersionError, match="bad magic"):
        tcl.RecordSet.load(tmp_path / "other.npz")
    tcl.read_records(ansor_dir).save(tmp_path / "rs.tcl")
    data = (tmp_path / "rs.tcl").read_bytes()
    (tmp_path / "cut.tcl").write_bytes(data[: len(data) - 100])
    with pytest.raises(tcl.FormatVersionError, match="past the end"):
        tcl.RecordSet.load(tmp_path / "cut.tcl")
    mapped = tcl.RecordSet.load(tmp_path / "rs.tcl", mmap=True)
    np.testing.assert_array_equal(mapped.kinds, tcl.RecordSet.load(tmp_path / "rs.tcl").kinds)


def test_select_and_filter(ansor_dir: Path) -> None:
    rs = tcl.read_records(ansor_dir)
    rows = np.array([5, 0, 52, 7])
    sub = rs.select(rows)
    assert len(sub) == 4
    for k, i in enumerate(rows):
        np.testing.assert_array_equal(sub.costs_of(k), rs.costs_of(i))
        np.testing.assert_array_equal(sub.kinds[k], rs.kinds[i])
        np.testing.assert_array_equal(sub.fields[k], rs.fields[i])
        assert sub.columns["task"][k] == rs.columns["task"][i]
    mask = rs.columns["target"] == 0
    assert len(rs.select(mask)) == int(mask.sum())
    cuda = rs.filter(targets=[t for t in rs.targets if t.startswith("cuda")])
    # resnet-18-NHWC-B1-cuda.json holds 24, conv2d.json one more.
    assert len(cuda) == 25 and all(rs.targets[t].startswith("cuda") for t in cuda.columns["target"])
    assert len(rs.filter(valid=True)) == 53 and len(rs.filter(valid=False)) == 0
    assert len(rs.filter(tasks=[0, 1])) == int(np.isin(rs.columns["task"], [0, 1]).sum())
    with pytest.raises(IndexError):
        rs.select([53])


def test_throughput_label(ansor_lines: list[bytes], tmp_path: Path) -> None:
    record = json.loads(ansor_lines[0])
    lines = []
    for cost in (2.0, 1.0, 4.0):
        record["r"][0] = [cost]
        lines.append(json.dumps(record))
    record["r"][1] = 4  # a failed measurement
    lines.append(json.dumps(record))
    (tmp_path / "log.json").write_text("\n".join(lines))
    rs = tcl.read_records(tmp_path / "log.json")
    np.testing.assert_allclose(rs.throughput(), [0.5, 1.0, 0.25, 0.0])
