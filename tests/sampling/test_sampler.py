"""The sampling core against its numpy twins, and the invariants of greedy k-center and RDU."""

from __future__ import annotations

import numpy as np
import pytest

from tcl import _core
from tcl.sampling import reference as ref
from tcl.sampling import sampler


@pytest.fixture(scope="module")
def points() -> np.ndarray:
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(6, 16)) * 4
    return (centers[rng.integers(0, 6, 600)] + rng.normal(size=(600, 16))).astype(np.float32)


def test_density_matches_numpy(points: np.ndarray) -> None:
    distances, indices = sampler.knn(points, 11)
    assert (indices[:, 0] == np.arange(len(points))).all()  # FAISS lists each point first
    fast = _core.density_from_knn(distances, indices)
    np.testing.assert_allclose(fast, ref.density_from_knn(distances, indices), rtol=1e-12)
    assert fast.max() == 1.0 and (fast > 0).all()
    indices[3, 1:] = -1  # a point with no neighbours
    assert _core.density_from_knn(distances, indices)[3] == 0.0


@pytest.mark.parametrize("threads", [1, 2])
def test_kcenter_matches_numpy_and_invariants(points: np.ndarray, threads: int) -> None:
    selected, radius, min_distance = _core.greedy_select(points, 60, [], None, 1.0, 7, threads)
    twin = ref.greedy_select(points, 60, [], None, 1.0, 7)
    np.testing.assert_array_equal(selected, twin[0])
    np.testing.assert_allclose(radius, twin[1], rtol=1e-12)
    np.testing.assert_allclose(min_distance, twin[2], rtol=1e-12)
    assert selected[0] == 7 and len(set(selected.tolist())) == 60
    assert (np.diff(radius[1:]) <= 1e-12).all()  # the k-center radius never grows
    # Each pick is the point farthest from those before it.
    assert radius[-1] >= min_distance.max()


def test_initial_points_are_kept_and_never_picked(points: np.ndarray) -> None:
    initial = [1, 2, 3, 500]
    selected, _ = sampler.kcenter(points, 30, initial=initial)
    assert not set(selected.tolist()) & set(initial)
    twin = ref.greedy_select(points, 30, initial, None, 1.0, 0)
    np.testing.assert_array_equal(selected, twin[0])
    with pytest.raises(Exception, match="exceeds"):
        sampler.kcenter(points[:10], 9, initial=[0, 1])


def test_rdu_matches_numpy_with_bonus(points: np.ndarray) -> None:
    rng = np.random.default_rng(1)
    uncertainty = rng.random(len(points))
    dens = sampler.density(points)
    weights = sampler.RDUWeights(representativeness=0.3, diversity=1.0, uncertainty=0.7)
    picked = sampler.rdu_select(
        points, 40, density_scores=dens, uncertainty=uncertainty, weights=weights
    )
    bonus = 0.3 * dens + 0.7 * uncertainty / uncertainty.max()
    twin = ref.greedy_select(points, 40, [], bonus, 1.0, int(np.argmax(bonus)))
    np.testing.assert_array_equal(picked, twin[0])
    # Uncertainty alone (no diversity) takes the most uncertain points first.
    only_u = sampler.rdu_select(
        points, 10, uncertainty=uncertainty, weights=sampler.RDUWeights(0.0, 0.0, 1.0)
    )
    np.testing.assert_array_equal(np.sort(only_u), np.sort(np.argsort(-uncertainty)[:10]))


def test_select_per_task_respects_budgets(points: np.ndarray) -> None:
    tasks = np.repeat(np.arange(6), 100)
    measured = np.zeros(len(points), dtype=bool)
    measured[[0, 1, 2, 150]] = True
    rows = sampler.select_per_task(points, tasks, 0.1, measured=measured)
    assert len(set(rows.tolist())) == len(rows) and not measured[rows].any()
    counts = np.bincount(tasks[rows], minlength=6)
    assert counts.tolist() == [7, 9, 10, 10, 10, 10]  # 10 each, less what was measured
    with pytest.raises(ValueError, match="fraction"):
        sampler.select_per_task(points, tasks, 0.0)


def test_distances_are_bitwise_those_of_numpy() -> None:
    # Same summation order as numpy's pairwise sum for 64-d rows: not close, equal.
    x = np.random.default_rng(2).normal(size=(300, 64)).astype(np.float32)
    fast = _core.greedy_select(x, 25, [], None, 1.0, 0, 2)
    twin = ref.greedy_select(x, 25, [], None, 1.0, 0)
    np.testing.assert_array_equal(fast[0], twin[0])
    np.testing.assert_array_equal(fast[2], twin[2])


def test_token_features_and_model_signals(tmp_path: object) -> None:
    from tcl import model as models
    from tcl.records import read_records, sample_data_path

    rs = read_records(sample_data_path())
    feats = sampler.token_features(rs)
    assert feats.shape == (len(rs), 32 + 2 * rs.tokenizer.num_fields) and np.isfinite(feats).all()
    net = models.build(models.ModelConfig(vocab_size=len(rs.vocab), d_model=16, dropout=0.2))
    emb = sampler.model_embeddings(net, rs)
    assert emb.shape == (len(rs), 16)
    spread = sampler.model_uncertainty(net, rs, passes=4)
    assert spread.shape == (len(rs),) and (spread > 0).any() and not net.training


def test_cli_sample(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    from pathlib import Path

    from tcl.cli import main

    out = Path(str(tmp_path)) / "selection.jsonl"
    pool = Path(str(tmp_path)) / "pool"
    pool.mkdir()
    # An unmeasured pool: the bundled records with their run times removed.
    from tcl.records import sample_data_path

    src = sample_data_path()
    (pool / "database_workload.json").write_bytes((src / "database_workload.json").read_bytes())
    lines = (src / "database_tuning_record.json").read_text().splitlines()
    unmeasured = [json.dumps([r[0], [r[1][0], None, *r[1][2:]]]) for r in map(json.loads, lines)]
    (pool / "database_tuning_record.json").write_text("\n".join(unmeasured) + "\n")
    assert main(["sample", str(pool), "--fraction", "0.25", "-o", str(out)]) == 0
    chosen = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(chosen) == 24 and len({(c["file"], c["line"]) for c in chosen}) == 24
    assert "selected 24 of 96" in capsys.readouterr().out
