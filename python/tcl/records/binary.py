"""A flat binary container for named numpy arrays plus a JSON header.

Layout: 8-byte magic, little-endian u64 header length, the UTF-8 JSON header (``meta`` and, per
array, name, dtype, shape, offset), then each array's raw bytes at a 64-byte aligned offset.
Loading reads each array straight into its numpy buffer (one copy from the page cache), or maps
it (``mmap=True``), which is why it reloads far faster than ``.npz`` (a zip archive).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from tcl.errors import FormatVersionError

MAGIC = b"TCLARR01"
_ALIGN = 64
_DTYPES = {"int32", "int64", "float32", "float64", "uint8", "bool"}


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def write_arrays(path: str | Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    entries: list[dict[str, Any]] = []
    offset = 0
    for name, array in arrays.items():
        if array.dtype.name not in _DTYPES:
            raise TypeError(f"array {name!r} has dtype {array.dtype}, not one of {sorted(_DTYPES)}")
        entries.append(
            {"name": name, "dtype": array.dtype.name, "shape": list(array.shape), "offset": offset}
        )
        offset = _aligned(offset + array.nbytes)
    header = json.dumps({"meta": meta, "arrays": entries}).encode()
    data_start = _aligned(len(MAGIC) + 8 + len(header))
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for entry, array in zip(entries, arrays.values(), strict=True):
            f.seek(data_start + entry["offset"])
            f.write(np.ascontiguousarray(array).data)
        f.truncate(data_start + offset)


def read_arrays(
    path: str | Path, *, mmap: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
            raise FormatVersionError(f"{path}: not a tcl binary file (bad magic)")
        (header_len,) = struct.unpack("<Q", head[len(MAGIC) :])
        if header_len > size:
            raise FormatVersionError(f"{path}: truncated header")
        try:
            header = json.loads(f.read(header_len))
        except ValueError as err:
            raise FormatVersionError(f"{path}: unreadable header ({err})") from None
        data_start = _aligned(len(MAGIC) + 8 + header_len)
        arrays: dict[str, np.ndarray] = {}
        for entry in header["arrays"]:
            if entry["dtype"] not in _DTYPES:
                raise FormatVersionError(
                    f"{path}: array {entry['name']!r} has dtype {entry['dtype']}"
                )
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            start = data_start + int(entry["offset"])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if start + nbytes > size:
                raise FormatVersionError(
                    f"{path}: array {entry['name']!r} runs past the end (truncated?)"
                )
            if mmap:
                arrays[entry["name"]] = np.memmap(
                    path, dtype=dtype, mode="r", offset=start, shape=shape
                )
                continue
            out = np.empty(shape, dtype=dtype)
            f.seek(start)
            if f.readinto(out.data.cast("B")) != nbytes:
                raise FormatVersionError(f"{path}: array {entry['name']!r} is truncated")
            arrays[entry["name"]] = out
    return header["meta"], arrays
