from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

class RecordReader:
    def __init__(
        self,
        vocab: list[str],
        frozen: bool,
        strict: bool,
        num_threads: int,
        max_len: int,
        num_fields: int,
        skip_kinds: list[str],
    ) -> None: ...
    def add(
        self,
        inputs: Sequence[tuple[str, str, bytes | memoryview, str, bytes | memoryview]],
        files: Sequence[int],
    ) -> None: ...
    def finish(self, files: Sequence[str]) -> dict[str, Any]: ...

def ansor_step_kinds() -> list[str]: ...
def metaschedule_instruction_kinds() -> list[str]: ...
def ansor_annotation_names() -> list[str]: ...
def density_from_knn(
    distances: npt.ArrayLike, indices: npt.ArrayLike
) -> npt.NDArray[np.float64]: ...
def greedy_select(
    points: npt.ArrayLike,
    k: int,
    initial: list[int],
    bonus: npt.ArrayLike | None,
    diversity_weight: float,
    first: int,
    num_threads: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def selective_scan_forward(
    u: npt.ArrayLike,
    delta: npt.ArrayLike,
    A: npt.ArrayLike,
    B: npt.ArrayLike,
    C: npt.ArrayLike,
    D: npt.ArrayLike | None,
    z: npt.ArrayLike | None,
    delta_bias: npt.ArrayLike | None,
    delta_softplus: bool,
    num_threads: int,
) -> npt.NDArray[np.float32]: ...
def selective_scan_backward(
    u: npt.ArrayLike,
    delta: npt.ArrayLike,
    A: npt.ArrayLike,
    B: npt.ArrayLike,
    C: npt.ArrayLike,
    D: npt.ArrayLike | None,
    z: npt.ArrayLike | None,
    delta_bias: npt.ArrayLike | None,
    delta_softplus: bool,
    dout: npt.ArrayLike,
    num_threads: int,
) -> tuple[npt.NDArray[np.float32] | None, ...]: ...
def causal_conv_forward(
    x: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None, num_threads: int
) -> npt.NDArray[np.float32]: ...
def causal_conv_backward(
    x: npt.ArrayLike,
    weight: npt.ArrayLike,
    bias: npt.ArrayLike | None,
    dout: npt.ArrayLike,
    num_threads: int,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32] | None]: ...
def kernel_isa() -> str: ...
def supported_kernel_isas() -> list[str]: ...
def set_kernel_isa(name: str) -> None: ...
