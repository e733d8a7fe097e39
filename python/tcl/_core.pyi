import mmap
from typing import Any

import numpy as np
import numpy.typing as npt

def read_records(
    inputs: list[tuple[str, str, bytes | mmap.mmap, str, bytes | mmap.mmap]],
    vocab: list[str],
    frozen: bool,
    strict: bool,
    num_threads: int,
    max_len: int,
    num_fields: int,
    skip_kinds: list[str],
) -> dict[str, Any]: ...
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
