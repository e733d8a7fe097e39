"""A network torch cannot export, or TVM cannot import, fails with one line that says why."""

from __future__ import annotations

import pytest
import torch

from tcl.errors import TclError
from tcl.zoo.extract import export_program, import_program

from conftest import applying

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
        import_program(export_program(applying(lambda x: torch.erfinv(x / 10)), (X,)))
    message = str(caught.value)
    assert message == (
        "the network uses operators that TVM's PyTorch importer cannot convert: aten.erfinv.default"
    )


def test_a_failure_inside_tvms_importer_is_one_line() -> None:
    masked = applying(lambda x: x[x > 0].sum())  # a boolean mask: an output of unknown size
    with pytest.raises(TclError) as caught:
        import_program(export_program(masked, (X,)))
    message = str(caught.value)
    assert message.startswith("TVM's PyTorch importer failed on the network: ")
    assert "\n" not in message
