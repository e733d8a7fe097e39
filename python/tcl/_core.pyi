import mmap
from typing import Any

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
