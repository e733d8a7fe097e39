"""MetaSchedule's XGB and MLP cost models trained and evaluated on replayed tcl records."""

from __future__ import annotations

import numpy as np
import pytest

from tcl.records import sample_data_path
from tcl.records.dataset import load_dataset
from tcl.training.metrics import pairwise_accuracy

pytestmark = pytest.mark.tvm


@pytest.mark.parametrize("kind", ["xgb", "mlp"])
def test_metaschedule_models_fit_replayed_records(kind: str) -> None:
    from tcl.integrations.tvm import baselines

    data = load_dataset(sample_data_path())
    scores = baselines.scores(kind, data.records, data.records)
    assert scores.shape == (len(data.records),) and np.isfinite(scores).all()
    # Trained on these very records, the model must order them much better than chance.
    assert pairwise_accuracy(data, scores) > 0.7


def test_fit_trains_the_model_it_is_given() -> None:
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

    from tcl.integrations.tvm import baselines

    data = load_dataset(sample_data_path())
    given = baselines.offline_xgb(XGBConfig(max_depth=2))
    few = data.records.select(data.records.columns["task"] < 4)  # four tasks are enough
    fitted = baselines.fit("xgb", few, model=given)
    assert fitted is given and given.booster is not None
    trees = given.booster.get_dump()
    # every tree of depth at most 2: no node is indented deeper than two levels
    assert trees and max(line.count("\t") for tree in trees for line in tree.splitlines()) <= 2


def test_replayed_record_is_the_stored_one() -> None:
    from tcl.integrations.tvm.baselines import Replayer

    data = load_dataset(sample_data_path())
    record = Replayer().record(data.records, 5)
    assert [float(x) for x in record.run_secs] == pytest.approx(data.records.costs_of(5).tolist())
    kinds = [i.kind.name for i in record.trace.insts]
    assert len(kinds) >= data.records.columns["num_steps"][5]
