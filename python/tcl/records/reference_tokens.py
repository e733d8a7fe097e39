"""The pure-Python twin of the C++ JSON reading and tokenizer (json module only): strict JSON
as the core accepts it, and the token of each Ansor step and MetaSchedule instruction. Used by
:mod:`tcl.records.reference`, the twin of the record reader.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tcl.records.tokenizer import TokenizerConfig, Vocab

MAX_DEPTH = 128  # deeper JSON is rejected by the C++ reader before it can exhaust a stack
MAX_VALUES = 1 << 20  # values in one line (cpp/json_reader.h kMaxJsonValues): bounds its memory
MAX_INDEX = 2147483647.0
MAX_HARDWARE_PARAM = 9007199254740992.0
MAX_KIND_STRING = 32
MS_FAILED_SECONDS = 1e9
MS_ERROR_CODE = 8
UNMEASURED = -1
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TARGET_PARAMS = (
    ("num-cores", 0),
    ("max_shared_memory_per_block", 3),
    ("max_threads_per_block", 5),
    ("thread_warp_size", 7),
)


class _Bad(Exception):
    def __init__(self, reason: str, field: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.field, self.detail = reason, field, detail


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse_int(text: str) -> int | float:
    return int(text) if len(text) <= 4000 else float(text)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _to_float(x: int | float) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _integral(x: Any, lo: float, hi: float) -> bool:
    f = _to_float(x)
    return math.isfinite(f) and f == math.floor(f) and lo <= f <= hi


def _depth(value: Any) -> tuple[int, int]:
    """Nesting depth and number of values (object keys counted); raises on a string holding a
    lone surrogate (a ``\\ud800`` escape without its pair), which no UTF-8 text can carry, as the
    C++ reader does."""
    deepest, values, stack = 0, 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        values += 1
        deepest = max(deepest, d)
        if isinstance(v, list):
            stack.extend((c, d + 1) for c in v)
        elif isinstance(v, dict):
            stack.extend((c, d + 1) for c in v.values())
            stack.extend((k, d + 1) for k in v)
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise _Bad("invalid_json", "", "lone surrogate escape in a string") from None
    return deepest, values


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object as json builds it (the last of duplicate keys wins), but a value that a later
    duplicate replaces is still checked: the C++ reader parses it, and rejects a lone surrogate
    escape in it."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            _depth(out[key])
        out[key] = value
    return out


def _loads(line: bytes) -> Any:
    try:
        value = json.loads(
            line.decode("utf-8"),
            parse_int=_parse_int,
            parse_constant=_reject_constant,
            object_pairs_hook=_object,
        )
    except (ValueError, RecursionError) as err:
        raise _Bad("invalid_json", "", str(err)) from None
    depth, values = _depth(value)
    # The C++ reader stops at the first of the two limits in the text; a line past both is
    # reported as too large here (no real record comes near either).
    if values > MAX_VALUES:
        raise _Bad("too_large", "", f"more than {MAX_VALUES} JSON values in one line")
    if depth > MAX_DEPTH:
        raise _Bad("invalid_json", "", "nesting too deep")
    return value


def _blank_or_comment(line: bytes) -> bool:
    return line.lstrip(b" \t\r\n")[:1] in (b"", b"#")


class _Tokens:
    """Mirror of cpp/tokenizer.cc: one record's tokens, committed only when the record is valid."""

    def __init__(
        self, vocab: Vocab, config: TokenizerConfig, known: set[str], annotations: list[str]
    ):
        self.vocab, self.config, self.known, self.annotations = vocab, config, known, annotations
        self.ids = {k: i for i, k in enumerate(vocab.kinds)}
        self.skip = set(config.skip_kinds)

    def begin(self) -> None:
        self.kinds: list[str | None] = []  # None stands for <unk>
        self.fields: list[list[float]] = []
        self.steps = 0
        self.unknown: dict[str, int] = {}

    def _emit(self, kind: str, known: bool, numbers: list[float]) -> None:
        self.steps += 1
        if len(self.kinds) >= self.config.max_len:
            return
        if known and (kind in self.ids or not self.vocab.frozen):
            self.kinds.append(kind)
        else:
            self.kinds.append(None)
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
        row = []
        for x in numbers[: self.config.num_fields]:
            s = math.log2(1.0 + abs(x))
            row.append(-s if x < 0 else s)
        self.fields.append(row + [0.0] * (self.config.num_fields - len(row)))

    @staticmethod
    def _suffix(parts: list[str], text: str) -> None:
        if 0 < len(text.encode("utf-8", "surrogatepass")) <= MAX_KIND_STRING:
            parts.append(text)

    def _number(self, numbers: list[float], x: Any) -> None:
        f = _to_float(x)
        if not math.isfinite(f):
            raise _Bad("out_of_range", "", "not finite")
        numbers.append(f)

    def _string(self, v: str, parts: list[str], numbers: list[float], rule: str) -> None:
        """Mirror of TokenWriter::AddString: what a string inside a step contributes."""
        if rule == "ansor":
            name, dollar, rest = v.partition("$")
            self._suffix(parts, name)
            if dollar:
                if _NUMBER.fullmatch(rest):
                    self._number(numbers, float(rest))
                else:
                    self._suffix(parts, rest)
        elif rule == "inputs":
            if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
                self._suffix(parts, v[1:-1])
        elif rule == "attrs":
            self._suffix(parts, v)

    def _walk(self, v: Any, parts: list[str], numbers: list[float], rule: str) -> None:
        if isinstance(v, bool):
            numbers.append(1.0 if v else 0.0)
        elif _is_num(v):
            self._number(numbers, v)
        elif v is None:
            numbers.append(-1.0)
        elif isinstance(v, str):
            self._string(v, parts, numbers, rule)
        else:
            for c in v.values() if isinstance(v, dict) else v:
                self._walk(c, parts, numbers, rule)

    def ansor_step(self, step: Any, field: str) -> None:
        if not isinstance(step, list) or not step or not isinstance(step[0], str):
            raise _Bad("wrong_type", field, "a step must be an array starting with its kind name")
        kind = step[0]
        if kind in self.skip:
            return
        if kind in self.known:
            _check_step_arguments(step, field)
        parts: list[str] = [kind]
        numbers: list[float] = []
        try:
            for k, arg in enumerate(step[1:], start=1):
                if (
                    k == 3
                    and kind == "AN"
                    and _is_num(arg)
                    and 0 <= arg < len(self.annotations)
                    and arg == math.floor(arg)
                ):
                    self._suffix(parts, self.annotations[int(arg)])
                    continue
                self._walk(arg, parts, numbers, "ansor")
        except _Bad:
            raise _Bad("out_of_range", field, "step holds a number that is not finite") from None
        self._emit(":".join(parts), kind in self.known, numbers)

    def ms_instruction(
        self, inst: list[Any], decision: Any, has_decision: bool, field: str
    ) -> None:
        kind, inputs, attrs = inst[0], inst[1], inst[2]
        if kind in self.skip:
            return
        parts: list[str] = [kind]
        numbers: list[float] = []
        try:
            if has_decision:
                if (
                    kind == "SampleCategorical"
                    and _is_num(decision)
                    and attrs
                    and isinstance(attrs[0], list)
                    and 0 <= decision < len(attrs[0])
                    and decision == math.floor(decision)
                ):
                    decision = attrs[0][int(decision)]
                self._walk(decision, parts, numbers, "ignored")
            names = kind == "GetSBlock"
            self._walk(inputs, parts, numbers, "ignored" if names else "inputs")
            self._walk(attrs, parts, numbers, "ignored" if names else "attrs")
        except _Bad:
            raise _Bad(
                "out_of_range", field, "instruction holds a number that is not finite"
            ) from None
        self._emit(":".join(parts), kind in self.known, numbers)


# Argument types of Ansor's steps by position, as TVM's auto_scheduler writes them: n number,
# N number or null, s string, a array of numbers, A array of numbers or nulls, b number or bool.
_STEP_SIGNATURES = {
    "AN": "nnn", "FU": "na", "PR": "nns", "RE": "na", "SP": "nnNAb", "FSP": "nnnn",
    "FFSP": "nnanb", "SA": "nnnn", "CA": "nnn", "CI": "n", "CR": "n", "CHR": "nsa", "CHW": "ns",
    "RF": "nnn",
}  # fmt: skip
_DESCRIBE = {
    "n": "a number", "N": "a number or null", "s": "a string", "a": "an array of numbers",
    "A": "an array of numbers or nulls", "b": "a number or bool",
}  # fmt: skip


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _mismatch(v: Any, code: str) -> str:
    if code in "aA":
        if not isinstance(v, list):
            return _json_type(v)
        for x in v:
            if not (_is_num(x) or (code == "A" and x is None)):
                return f"an array holding a {_json_type(x)}"
        return ""
    ok = {
        "n": _is_num(v),
        "N": _is_num(v) or v is None,
        "s": isinstance(v, str),
        "b": _is_num(v) or isinstance(v, bool),
    }[code]
    return "" if ok else _json_type(v)


def _check_step_arguments(step: list[Any], field: str) -> None:
    kind, args = step[0], _STEP_SIGNATURES.get(step[0], "")
    if len(step) - 1 < len(args):
        raise _Bad(
            "wrong_type",
            f"{field}[{len(step)}]",
            f"a {kind} step takes {len(args)} arguments, got {len(step) - 1}",
        )
    for k, code in enumerate(args, start=1):
        got = _mismatch(step[k], code)
        if got:
            raise _Bad(
                "wrong_type",
                f"{field}[{k}]",
                f"{kind} argument {k}: expected {_DESCRIBE[code]}, got {got}",
            )
