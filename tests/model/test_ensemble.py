"""An ensemble scores as the mean of its members' standardized scores, whatever the batch, and
round-trips through a checkpoint like a single model; averaged fine-tunes are one model whose
weights are the members' mean."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import tcl
from tcl import model
from tcl.model import ModelConfig
from tcl.model.ensemble import Ensemble, averaged
from tcl.model.inputs import calibrated_ensemble, predict, reads_platform


def _members(config: ModelConfig, k: int) -> list[torch.nn.Module]:
    nets = []
    for seed in range(k):
        torch.manual_seed(seed)
        nets.append(model.build(config).eval())
    return nets


def test_the_score_is_the_mean_of_standardized_member_scores() -> None:
    config = ModelConfig(vocab_size=30, d_model=16, n_layers=1, max_len=12, dropout=0.0)
    members = _members(config, 3)
    net = Ensemble(replace(config, members=3), members).eval()
    kinds, fields = torch.randint(1, 30, (40, 12)), torch.randn(40, 12, 10)
    with torch.no_grad():
        raw = torch.stack([m(kinds, fields) for m in members])
        net.calibrate(raw)
        expected = ((raw - raw.mean(1, keepdim=True)) / raw.std(1, keepdim=True)).mean(0)
        torch.testing.assert_close(net(kinds, fields), expected)
        # a program's score does not depend on the rest of its batch
        torch.testing.assert_close(net(kinds[5:9], fields[5:9]), expected[5:9])
        # one pass: the same scores, and every member's embedding side by side
        scores, embeddings = net.score_and_embed(kinds, fields)
        torch.testing.assert_close(scores, expected)
        torch.testing.assert_close(embeddings[:, 16:32], members[1].embed(kinds, fields))
        # standardizing matters: a member on a 1000x larger scale does not outvote the others
        members[0].head.out[2].weight.mul_(1000.0)
        members[0].head.out[2].bias.mul_(1000.0)
        net.calibrate(torch.stack([m(kinds, fields) for m in members]))
        torch.testing.assert_close(net(kinds, fields), expected, rtol=1e-4, atol=1e-4)


def test_an_ensemble_checkpoint_loads_as_one_model(tmp_path: Path) -> None:
    config = ModelConfig(vocab_size=20, d_model=8, n_layers=1, max_len=8, platform_features=8)
    net = Ensemble(replace(config, members=2), _members(config, 2)).eval()
    kinds, fields = torch.randint(1, 20, (6, 8)), torch.randn(6, 8, 10)
    platform = torch.rand(6, 8)
    with torch.no_grad():
        net.calibrate(torch.randn(2, 50) * torch.tensor([[1.0], [30.0]]) + 4.0)
        scores = net(kinds, fields, platform)
    vocab = tcl.Vocab(["<pad>", "<unk>"] + [f"k{i}" for i in range(18)])
    model.save(tmp_path / "e.pt", net, vocab, tcl.TokenizerConfig(max_len=8))
    back, *_ = model.load(tmp_path / "e.pt")
    assert isinstance(back, Ensemble) and back.config.members == 2 and reads_platform(back)
    torch.testing.assert_close(back(kinds, fields, platform), scores)
    torch.testing.assert_close(back.scale, net.scale)


def test_ensembles_refuse_what_they_cannot_do() -> None:
    config = ModelConfig(vocab_size=20, d_model=8, n_layers=1)
    with pytest.raises(ValueError, match="needs that many models"):
        Ensemble(replace(config, members=3), _members(config, 2))
    other = replace(config, d_model=16)
    with pytest.raises(ValueError, match="needs that many models"):
        Ensemble(replace(config, members=2), _members(config, 1) + _members(other, 1))
    net = model.build(replace(config, members=2))
    assert isinstance(net, Ensemble)
    with pytest.raises(ValueError, match="calibration needs"):
        net.calibrate(torch.zeros(3, 10))
    with pytest.raises(ValueError, match="member by member"):
        model.with_platform_input(net, 8)


def test_predict_scores_records_with_an_ensemble() -> None:
    rs = tcl.read_records(tcl.sample_data_path())
    config = ModelConfig(vocab_size=len(rs.vocab), d_model=8, n_layers=1, dropout=0.0)
    members = _members(config, 2)
    net = calibrated_ensemble(members, rs).eval()
    assert isinstance(net, Ensemble) and net.config == replace(config, members=2)
    raw = np.stack([predict(m, rs) for m in members])
    expected = ((raw - raw.mean(1, keepdims=True)) / raw.std(1, ddof=1, keepdims=True)).mean(0)
    np.testing.assert_allclose(predict(net, rs), expected, rtol=1e-4, atol=1e-5)


def test_averaged_weights_are_the_members_mean() -> None:
    config = ModelConfig(vocab_size=20, d_model=8, n_layers=2, max_len=8, dropout=0.0)
    members = _members(config, 3)
    soup = averaged(members)
    assert soup.config == config and not soup.training
    for name, weight in soup.state_dict().items():
        expected = sum(m.state_dict()[name] for m in members) / 3
        torch.testing.assert_close(weight, expected)
    kinds, fields = torch.randint(1, 20, (5, 8)), torch.randn(5, 8, 10)
    with torch.no_grad():
        # one model averaged with itself is that model
        torch.testing.assert_close(
            averaged([members[0]] * 4)(kinds, fields), members[0](kinds, fields)
        )
        # fine-tunes that differ only in the output layer, which is linear in its weights,
        # score as the mean of their scores
        tuned = [copy.deepcopy(members[0]) for _ in range(2)]
        tuned[0].head.out[2].weight.add_(0.5)
        tuned[1].head.out[2].bias.sub_(2.0)
        mean = (tuned[0](kinds, fields) + tuned[1](kinds, fields)) / 2
        torch.testing.assert_close(averaged(tuned)(kinds, fields), mean)


def test_averaging_refuses_models_of_different_shapes() -> None:
    config = ModelConfig(vocab_size=20, d_model=8, n_layers=1)
    with pytest.raises(ValueError, match="at least one"):
        averaged([])
    with pytest.raises(ValueError, match="share one config"):
        averaged(_members(config, 1) + _members(replace(config, d_model=16), 1))
