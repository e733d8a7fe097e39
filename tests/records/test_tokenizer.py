"""Tokenizer settings and the vocabulary: caps, field widths, frozen vocabularies, save/load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.records.reference import read_records_reference
from tcl.records.tokenizer import DEFAULT_SKIP_KINDS, known_step_kinds

from conftest import assert_same_records


def test_default_vocab_holds_known_kinds_in_order() -> None:
    vocab = tcl.Vocab()
    assert vocab.kinds[:4] == ["<pad>", "<unk>", "AN", "FU"]
    assert vocab.kinds[2:] == known_step_kinds()
    assert "SamplePerfectTile" in vocab.kinds and len(vocab) == 2 + 14 + 52


def test_vocab_save_load_and_version(tmp_path: Path) -> None:
    vocab = tcl.Vocab().extended(["Annotate:meta_schedule.parallel"]).freeze()
    vocab.save(tmp_path / "vocab.json")
    assert tcl.Vocab.load(tmp_path / "vocab.json") == vocab
    data = json.loads((tmp_path / "vocab.json").read_text())
    data["format_version"] = 99
    (tmp_path / "vocab.json").write_text(json.dumps(data))
    with pytest.raises(tcl.FormatVersionError, match="99"):
        tcl.Vocab.load(tmp_path / "vocab.json")
    with pytest.raises(ValueError, match="<pad>"):
        tcl.Vocab(["a", "b"])


def test_frozen_vocab_maps_new_kinds_to_unk(ansor_dir: Path) -> None:
    grown = tcl.read_records(ansor_dir)
    assert "AN:parallel" in grown.vocab.kinds and not grown.vocab.frozen
    frozen = tcl.read_records(ansor_dir, vocab=tcl.Vocab().freeze())
    assert frozen.vocab == tcl.Vocab().freeze()
    unk = frozen.columns["token_kinds"] == 1
    assert unk.sum() == sum(frozen.report.unknown_kinds.values()) > 0
    assert "AN:parallel" in frozen.report.unknown_kinds
    # Same vocabulary as the grown read: identical ids, nothing unknown.
    again = tcl.read_records(ansor_dir, vocab=grown.vocab.freeze())
    np.testing.assert_array_equal(again.columns["token_kinds"], grown.columns["token_kinds"])
    assert again.report.unknown_kinds == {}
    assert_same_records(frozen, read_records_reference(ansor_dir, vocab=tcl.Vocab().freeze()))


def test_max_len_cuts_and_num_fields_widths(ansor_dir: Path) -> None:
    config = tcl.TokenizerConfig(max_len=5, num_fields=3)
    rs = tcl.read_records(ansor_dir, tokenizer=config)
    full = tcl.read_records(ansor_dir)
    assert rs.kinds.shape == (53, 5) and rs.fields.shape == (53, 5, 3)
    np.testing.assert_array_equal(rs.columns["num_steps"], full.columns["num_steps"])
    np.testing.assert_array_equal(rs.lengths, np.minimum(full.lengths, 5))
    np.testing.assert_array_equal(rs.fields, full.fields[:, :5, :3])
    assert_same_records(rs, read_records_reference(ansor_dir, tokenizer=config))
    with pytest.raises(ValueError, match="positive"):
        tcl.TokenizerConfig(max_len=0)


def test_skip_kinds(ansor_dir: Path) -> None:
    rs = tcl.read_records(ansor_dir, tokenizer=tcl.TokenizerConfig(skip_kinds=("SP", "AN")))
    full = tcl.read_records(ansor_dir)
    names = {rs.vocab.kinds[i] for i in np.unique(rs.columns["token_kinds"])}
    assert not any(n == "SP" or n.startswith("AN:") for n in names)
    assert (rs.columns["num_steps"] < full.columns["num_steps"]).any()
    assert "GetSBlock" in DEFAULT_SKIP_KINDS


def test_tokenizer_config_round_trip() -> None:
    config = tcl.TokenizerConfig(max_len=25, num_fields=8, skip_kinds=("EnterPostproc",))
    assert tcl.TokenizerConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown tokenizer settings"):
        tcl.TokenizerConfig.from_dict({**config.to_dict(), "colour": 1})
