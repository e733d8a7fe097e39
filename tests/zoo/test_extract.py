"""A network torch cannot export, or TVM cannot import, fails with one line that says why; what
tcl helps torch.export through exports."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tcl.errors import TclError
from tcl.zoo.extract import export_program, import_program

from conftest import applying, imported_output

X = torch.arange(30, dtype=torch.float32).reshape(2, 5, 3)


class _Branchy(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
            return x * 2
        return x - 1


def test_a_model_torch_cannot_export_is_one_line_naming_its_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(TclError) as caught:
        export_program(_Branchy(), (X,))
    message = str(caught.value)
    assert message.startswith("torch.export cannot export the model: ") and "\n" not in message
    assert "test_extract.py" in message and "if x.sum() > 0:" in message
    assert "def forward" not in capsys.readouterr().err  # torch's partial graph is not printed


def test_an_operator_tvm_cannot_convert_is_named_in_one_line() -> None:
    with pytest.raises(TclError) as caught:
        import_program(export_program(applying(lambda x: torch.lgamma(x / 10)), (X,)))
    message = str(caught.value)
    assert message == (
        "the network uses operators that TVM's PyTorch importer cannot convert: aten.lgamma.default"
    )


def test_a_failure_inside_tvms_importer_is_one_line() -> None:
    masked = applying(lambda x: x[x > 0].sum())  # a boolean mask: an output of unknown size
    with pytest.raises(TclError) as caught:
        import_program(export_program(masked, (X,)))
    message = str(caught.value)
    assert message.startswith("TVM's PyTorch importer failed on the network: ")
    assert "\n" not in message


def _transformer_layers() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2
    )
    whole = torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(6)
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    return {
        "an encoder given a causal mask": (applying(lambda x: encoder(x, mask=causal)), (src,)),
        "an encoder given a mask as an input": (
            applying(lambda x, m: encoder(x, mask=m)),
            (src, causal),
        ),
        "nn.Transformer given a target mask": (
            applying(lambda s, t: whole(s, t, tgt_mask=causal[:4, :4])),
            (src, tgt),
        ),
    }


@pytest.mark.parametrize("name", list(_transformer_layers()))
def test_transformer_layers_given_a_mask_export_and_compute_what_pytorch_does(name: str) -> None:
    # torch.export stopped at the layers' check of whether the mask is causal (torch.equal)
    module, inputs = _transformer_layers()[name]
    with torch.no_grad():
        expected = module.eval()(*inputs).numpy()
    np.testing.assert_allclose(imported_output(module, *inputs), expected, atol=1e-5)
