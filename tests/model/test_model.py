"""The selective scan against its literal transcription, and the cost models' checkpoints."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

import tcl
from tcl import model, zoo
from tcl.model import ModelConfig
from tcl.model.scan import selective_scan, selective_scan_literal, selective_scan_torch


def _scan_inputs(
    seed: int, batch: int = 2, dim: int = 3, state: int = 4, length: int = 5
) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = [
        (batch, dim, length),
        (batch, dim, length),
        (dim, state),
        (batch, state, length),
        (batch, state, length),
        (dim,),
        (batch, dim, length),
        (dim,),
    ]
    tensors = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
    tensors[2] = -torch.rand(dim, state, generator=g, dtype=torch.float64) * 2  # A < 0
    return [t.requires_grad_() for t in tensors]


@pytest.mark.parametrize("softplus", [True, False])
def test_scan_matches_literal_values_and_gradients(softplus: bool) -> None:
    inputs = _scan_inputs(0)
    fast = selective_scan_torch(*inputs, delta_softplus=softplus)
    slow = selective_scan_literal(*inputs, delta_softplus=softplus)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-12)
    weights = torch.randn_like(fast)
    grads_fast = torch.autograd.grad((fast * weights).sum(), inputs)
    grads_slow = torch.autograd.grad((slow * weights).sum(), inputs)
    for a, b in zip(grads_fast, grads_slow, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


def test_scan_optional_terms_and_dispatch() -> None:
    u, delta, A, B, C, *_ = _scan_inputs(1)
    plain = selective_scan(u, delta, A, B, C)
    torch.testing.assert_close(plain, selective_scan_literal(u, delta, A, B, C))
    assert plain.shape == u.shape and plain.dtype == u.dtype


@pytest.mark.gpu
def test_fused_cuda_kernel_matches_reference() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here")
    kernel = pytest.importorskip("mamba_ssm.ops.selective_scan_interface").selective_scan_fn
    inputs = [
        t.detach().float().cuda() for t in _scan_inputs(2, batch=4, dim=16, state=8, length=40)
    ]
    torch.testing.assert_close(
        kernel(*inputs, delta_softplus=True),
        selective_scan_torch(*inputs, delta_softplus=True),
        rtol=3e-3,
        atol=5e-3,
    )


@pytest.mark.parametrize("arch", ["mamba", "attention", "lstm"])
def test_models_score_and_round_trip(arch: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = ModelConfig(arch=arch, vocab_size=90, num_fields=10, max_len=16)
    net = model.build(config).eval()
    kinds = torch.randint(1, 90, (5, 16))
    kinds[0, 10:] = 0  # padding
    fields = torch.randn(5, 16, 10)
    scores = net(kinds, fields)
    assert scores.shape == (5,) and torch.isfinite(scores).all()
    # Padding does not change a score: the pool masks it and the scan is causal.
    altered = fields.clone()
    altered[0, 10:] = 99.0
    torch.testing.assert_close(net(kinds, altered)[0], scores[0])
    vocab = tcl.Vocab(["<pad>", "<unk>"] + [f"k{i}" for i in range(88)])
    tokenizer = tcl.TokenizerConfig(max_len=16)
    model.save(tmp_path / "m.pt", net, vocab, tokenizer, {"note": "x"})
    back, back_vocab, back_tokenizer, extra = model.load(tmp_path / "m.pt")
    assert back_vocab.frozen and back_vocab.kinds == vocab.kinds and back_tokenizer == tokenizer
    assert extra == {"note": "x"}
    torch.testing.assert_close(back(kinds, fields), scores)
    # one pass gives forward's scores and embed's embeddings
    both = net.score_and_embed(kinds, fields)
    torch.testing.assert_close(both[0], scores)
    torch.testing.assert_close(both[1], net.embed(kinds, fields))


def test_default_mamba_fits_the_size_budget() -> None:
    net = model.build(ModelConfig(arch="mamba", vocab_size=256))
    assert model.parameter_bytes(net) <= 0.35e6


def test_checkpoint_version_and_config_are_checked(tmp_path: Path) -> None:
    torch.save({"format_version": 99}, tmp_path / "old.pt")
    with pytest.raises(tcl.FormatVersionError, match="99"):
        model.load(tmp_path / "old.pt")
    with pytest.raises(ValueError, match="unknown model settings"):
        ModelConfig.from_dict({"arch": "mamba", "colour": 3})
    with pytest.raises(ValueError, match="unknown model architecture"):
        model.build(ModelConfig(arch="rnn"))


def _saved(tmp_path: Path) -> Path:
    from tcl.records.tokenizer import TokenizerConfig, Vocab

    vocab = Vocab()
    net = model.build(ModelConfig(vocab_size=len(vocab), d_model=16, n_layers=1))
    path = tmp_path / "m.pt"
    model.save(path, net, vocab, TokenizerConfig())
    return path


def _rewrite(path: Path, change: object) -> Path:
    ckpt = torch.load(path, weights_only=True)
    change(ckpt)  # type: ignore[operator]
    out = path.with_name("changed.pt")
    torch.save(ckpt, out)
    return out


def test_bad_checkpoints_are_one_clear_error(tmp_path: Path) -> None:
    good = _saved(tmp_path)
    model.load(good)
    data = bytearray(good.read_bytes())
    # Flip 2,000 bytes of the weights (the largest stored tensor is the kind embedding's).
    start = len(data) // 3
    for i in range(start, start + 2000):
        data[i] ^= 0x5A
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(bytes(data))
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "text.pt").write_text("not a checkpoint\n")
    (tmp_path / "truncated.pt").write_bytes(good.read_bytes()[: len(data) // 2])

    def shape(c: dict) -> None:  # type: ignore[type-arg]
        c["state_dict"]["head.norm.weight"] = torch.zeros(3, 3)
        c["checksum"] = model.weights_checksum(c["state_dict"])

    cases = {
        corrupt: "(do not match their checksum|not a readable tcl checkpoint)",
        tmp_path / "empty.pt": "not a readable tcl checkpoint",
        tmp_path / "text.pt": "not a readable tcl checkpoint",
        tmp_path / "truncated.pt": "not a readable tcl checkpoint",
        _rewrite(good, lambda c: c.pop("vocab")): "the checkpoint has no vocab",
        _rewrite(good, lambda c: c.pop("checksum")): "the checkpoint has no checksum",
        _rewrite(good, shape): "the weights do not fit the model",
        # Weights changed after saving (the checksum kept): what bit rot in the data does.
        _rewrite(good, lambda c: c["state_dict"]["head.norm.weight"].add_(0.01)): "checksum",
    }
    for path, message in cases.items():
        with pytest.raises(tcl.TclError, match=message) as info:
            model.load(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def _as_saved_on_a_gpu(path: Path) -> Path:
    """The checkpoint as ``torch.save`` writes it from a GPU: every storage's location is
    ``cuda:0`` (in the pickle's persistent ids), the bytes the same."""
    out = path.with_name("gpu.pt")
    with zipfile.ZipFile(path) as old, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as new:
        for item in old.infolist():
            data = old.read(item.filename)
            if item.filename.endswith("data.pkl"):
                assert b"X\x03\x00\x00\x00cpu" in data
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            new.writestr(item, data)
    return out


def test_a_checkpoint_saved_on_a_gpu_loads_here_and_is_checked_alike(tmp_path: Path) -> None:
    good = _saved(tmp_path)
    gpu = _as_saved_on_a_gpu(good)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):  # what torch.load alone does here
            torch.load(gpu, weights_only=True)
    net, *_ = model.load(gpu)
    same, *_ = model.load(good)
    assert all(p.device.type == "cpu" for p in net.parameters())
    for a, b in zip(net.state_dict().values(), same.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    changed = _as_saved_on_a_gpu(
        _rewrite(good, lambda c: c["state_dict"]["head.norm.weight"].add_(0.01))
    )
    with pytest.raises(tcl.CheckpointError, match="checksum"):
        model.load(changed)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("d_model", 2_000_000),
        ("n_layers", 0),
        ("vocab_size", -5),
        ("d_state", 2.5),
        ("dropout", 1.0),
        ("members", 0),
        ("members", 10_000),
    ],
)
def test_absurd_configs_fail_before_allocating(tmp_path: Path, setting: str, value: object) -> None:
    path = _rewrite(_saved(tmp_path), lambda c: c["config"].update({setting: value}))
    with pytest.raises(tcl.CheckpointError, match=f"bad model settings .*{setting}"):
        model.load(path)


def test_scan_in_batch_chunks_matches_literal() -> None:
    inputs = _scan_inputs(3, batch=130, dim=2, state=2, length=3)  # more than one chunk of 128
    torch.testing.assert_close(
        selective_scan_torch(*inputs, delta_softplus=True),
        selective_scan_literal(*inputs, delta_softplus=True),
        rtol=1e-10,
        atol=1e-12,
    )


def test_packaged_base_model_loads_and_fits_the_budget() -> None:
    net, vocab, tokenizer, extra = model.load(model.base_model_path())
    assert model.parameter_bytes(net) <= 0.35e6 and vocab.frozen
    training = extra["training"]
    assert not set(training["training_networks"]) & set(zoo.HELD_OUT)
    kinds = torch.randint(1, len(vocab.kinds), (3, tokenizer.max_len))
    assert torch.isfinite(net(kinds, torch.randn(3, tokenizer.max_len, tokenizer.num_fields))).all()


def test_packaged_base_model_is_the_10_network_model_fine_tuned_on_search_drawn_programs() -> None:
    # bench/README.md's earlier figures name the model the packaged one is fine-tuned from
    base10 = Path(__file__).parents[2] / "bench" / "models" / "base10.pt"
    _, vocab10, tokenizer10, extra10 = model.load(base10)
    _, vocab, tokenizer, extra = model.load(model.base_model_path())
    assert vocab.kinds == vocab10.kinds and tokenizer.max_len == tokenizer10.max_len
    first, packaged = extra10["training"], extra["training"]
    assert len(first["training_networks"]) == 10 and not first.get("search_drawn")
    assert set(first["training_networks"]) < set(packaged["training_networks"])
    assert packaged["search_drawn"] and packaged["init"] == "base_model.pt"


def test_packaged_cuda_model_is_the_base_model_moved_to_a_gpu() -> None:
    from tcl.tuning.platforms import DESCRIPTOR_FEATURES

    net, vocab, tokenizer, extra = model.load(model.base_model_path("cuda"))
    base_vocab = model.load(model.base_model_path())[1]
    assert model.parameter_bytes(net) <= 0.35e6 and vocab.kinds == base_vocab.kinds
    # moved by tcl distill to one platform, the committed CUDA records, read as a GPU's
    [platform] = extra["platforms"]
    gpu = dict(zip(DESCRIPTOR_FEATURES, extra["descriptors"][platform], strict=True))
    assert platform.startswith("data/cuda-") and gpu["gpu"] == 1.0 and gpu["cpu"] == 0.0
    kinds = torch.randint(1, len(vocab.kinds), (3, tokenizer.max_len))
    assert torch.isfinite(net(kinds, torch.randn(3, tokenizer.max_len, tokenizer.num_fields))).all()
    with pytest.raises(ValueError, match="no base model for device 'rocm'"):
        model.base_model_path("rocm")


def test_packaged_blocked_model_is_the_base_model_moved_to_nchw16c_programs() -> None:
    import json

    path = model.base_model_path("cpu", "NCHW16c")
    assert path.name == "base_model_nchw16c.pt" and path != model.base_model_path()
    net, vocab, _, extra = model.load(path)
    assert model.parameter_bytes(net) <= 0.35e6
    assert vocab.kinds == model.load(model.base_model_path())[1].kinds
    # moved by tcl distill to one store: search-drawn programs of blocked convolutions
    [store] = extra["platforms"]
    manifest = json.loads((Path(__file__).parents[2] / store / "manifest.json").read_text())
    assert store.startswith("data/cpu-") and manifest["conv_layout"] == "NCHW16c"
    assert not set(manifest["networks"]) & set(zoo.HELD_OUT)
    # other layouts and devices keep the device's model
    assert model.base_model_path("cpu", "NCHW8c") == model.base_model_path()
    assert model.base_model_path("cpu", None) == model.base_model_path()
    assert model.base_model_path("cuda", "NCHW16c") == model.base_model_path("cuda")


def test_platform_input_starts_silent_and_binds_per_platform() -> None:
    from tcl import model as models

    torch.manual_seed(0)
    config = models.ModelConfig(vocab_size=20, d_model=16, n_layers=1, dropout=0.0)
    plain = models.build(config).eval()
    conditioned = models.with_platform_input(plain, 8).eval()
    grown = models.num_parameters(conditioned) - models.num_parameters(plain)
    assert grown == 8 * 16 + 16  # one fixed-width input, whatever the number of platforms
    kinds, fields = torch.randint(1, 20, (3, 7)), torch.randn(3, 7, 10)
    one, two = [1.0, 0, 1, 0, 0, 0, 1, 0], [1.0, 0, 0, 1, 0, 0, 0, 1]
    for d in (one, two):  # zero weights: the same scores as the plain model
        bound = models.ForPlatform(conditioned, d)
        torch.testing.assert_close(bound(kinds, fields), plain(kinds, fields))
        assert bound.embed(kinds, fields).shape == (3, 16)
    with torch.no_grad():
        conditioned.encoder.platform.weight.normal_()
    a = models.ForPlatform(conditioned, one)(kinds, fields)
    b = models.ForPlatform(conditioned, two)(kinds, fields)
    assert not torch.allclose(a, b)
    with pytest.raises(ValueError, match="platform features"):
        models.with_platform_input(conditioned, 4)
