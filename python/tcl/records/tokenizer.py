"""Tokenizer settings and the kind vocabulary, both saved with every record set and model."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tcl import _core
from tcl.errors import FormatVersionError

VOCAB_FORMAT_VERSION = 1
PAD, UNK = "<pad>", "<unk>"

# MetaSchedule bookkeeping instructions: they look blocks and loops up but choose nothing.
DEFAULT_SKIP_KINDS: tuple[str, ...] = (
    "GetSBlock",
    "GetLoops",
    "GetChildBlocks",
    "GetProducers",
    "GetConsumers",
    "GetOutputBlocks",
    "EnterPostproc",
)


@dataclass(frozen=True)
class TokenizerConfig:
    """How a schedule becomes a sequence of step vectors.

    Parameters
    ----------
    max_len : int
        Tokens kept per schedule (TLP used 25 Ansor steps on CPU; MetaSchedule traces run
        longer). The full length is kept in ``RecordSet.num_steps``.
    num_fields : int
        Numbers per token (split factors, extents, decisions, ...), zero-padded.
    skip_kinds : tuple of str
        Step kinds dropped before tokenizing.
    """

    max_len: int = 64
    num_fields: int = 10
    skip_kinds: tuple[str, ...] = DEFAULT_SKIP_KINDS

    def __post_init__(self) -> None:
        if self.max_len <= 0 or self.num_fields <= 0:
            raise ValueError(
                f"max_len and num_fields must be positive, got {self.max_len}, {self.num_fields}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "skip_kinds": list(self.skip_kinds)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenizerConfig:
        unknown = set(data) - {"max_len", "num_fields", "skip_kinds"}
        if unknown:
            raise ValueError(f"unknown tokenizer settings: {sorted(unknown)}")
        return cls(
            max_len=int(data["max_len"]),
            num_fields=int(data["num_fields"]),
            skip_kinds=tuple(data["skip_kinds"]),
        )


def known_step_kinds() -> list[str]:
    """Ansor's 14 step kinds, then MetaSchedule's instruction kinds (the order of default ids)."""
    return list(_core.ansor_step_kinds()) + list(_core.metaschedule_instruction_kinds())


@dataclass
class Vocab:
    """Token kind names; a kind's id is its index. Id 0 is ``<pad>``, id 1 is ``<unk>``.

    A growable vocabulary (``frozen=False``) learns the composite kinds it meets
    ("Annotate:meta_schedule.parallel"); a frozen one, such as a trained model's, maps them to
    ``<unk>`` and the reader counts them.
    """

    kinds: list[str] = field(default_factory=lambda: [PAD, UNK, *known_step_kinds()])
    frozen: bool = False

    def __post_init__(self) -> None:
        if self.kinds[:2] != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r}, {UNK!r}; got {self.kinds[:2]}")
        if len(set(self.kinds)) != len(self.kinds):
            raise ValueError("a vocabulary holds each kind once")

    def __len__(self) -> int:
        return len(self.kinds)

    def index(self, kind: str) -> int:
        """Id of ``kind``, or the ``<unk>`` id."""
        try:
            return self.kinds.index(kind)
        except ValueError:
            return 1

    def freeze(self) -> Vocab:
        return Vocab(list(self.kinds), frozen=True)

    def extended(self, kinds: Iterable[str]) -> Vocab:
        """A copy that also holds ``kinds`` (in order, skipping those already present)."""
        out = list(self.kinds)
        seen = set(out)
        for kind in kinds:
            if kind not in seen:
                seen.add(kind)
                out.append(kind)
        return Vocab(out, frozen=self.frozen)

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": VOCAB_FORMAT_VERSION, "kinds": self.kinds, "frozen": self.frozen}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Vocab:
        version = data.get("format_version")
        if version != VOCAB_FORMAT_VERSION:
            raise FormatVersionError(
                f"vocabulary format version {version!r}; this tcl reads {VOCAB_FORMAT_VERSION}"
            )
        return cls(list(data["kinds"]), frozen=bool(data["frozen"]))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        return cls.from_dict(json.loads(Path(path).read_text()))


def vocab_or_default(vocab: Vocab | Sequence[str] | None) -> Vocab:
    if vocab is None:
        return Vocab()
    if isinstance(vocab, Vocab):
        return vocab
    return Vocab(list(vocab))
