"""tcl's cost model inside stock apache-tvm MetaSchedule (a drop-in ``PyCostModel``).

>>> from tcl.integrations.tvm.adapter import CostModel
>>> ms.tune_tir(mod, target, work_dir, max_trials_global=64,
...             cost_model=CostModel.load("mamba.pt"))   # CostModel.load(): the base model

``predict`` tokenizes the live candidates' traces with the C++ record core (the same parser and
tokenizer as training; the traces' JSON as MetaSchedule's record writer writes it,
:mod:`trace_texts`) and returns float64 scores, larger is better; what
the network answered for a program is kept until it is fine-tuned (:mod:`score_cache`).
``update`` can learn from the tuner's measurements during the run: ``learn=True`` fits a
Gaussian process per task on the model's embedding, with the model's score as its mean
(``tcl.training.task_gp``; the model itself is left as it is); ``online_steps`` > 0 fine-tunes
the model (``tcl.training.online`` replays every task's measured programs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tcl import model as models
from tcl.integrations.tvm.measure import task_of, to_py
from tcl.integrations.tvm.patches import enters_tvm
from tcl.integrations.tvm.score_cache import ScoreCache
from tcl.integrations.tvm.trace_texts import trace_texts
from tcl.model.inputs import predict, predict_with_embeddings
from tcl.records import RecordSet, read_inputs
from tcl.records.tokenizer import TokenizerConfig, Vocab
from tcl.training.online import OnlineConfig, OnlineTrainer
from tcl.training.task_gp import GPConfig, TaskGP

_WORKLOAD = b'["0",""]\n'


def candidate_records(
    candidates: list[Any],
    target: Any,
    vocab: Vocab,
    tokenizer: TokenizerConfig,
    texts: Callable[[list[Any]], list[str]] | None = None,
) -> RecordSet:
    """The candidates as a RecordSet of ``target`` (a ``tvm.target.Target``; it gives a model
    that reads the platform its descriptor), unmeasured, tokenized by the C++ core; ``texts``
    writes their traces' JSON (default: MetaSchedule's record writer, :func:`trace_texts`;
    ``trace_texts.reference_texts`` is its reference twin)."""
    target_json = json.dumps(to_py(target.export()), separators=(",", ":"))
    written = (texts or trace_texts)(candidates)
    lines = [f"[0,[{trace},null,{target_json},[]]]" for trace in written]
    data = ("\n".join(lines) + "\n").encode()
    return read_inputs(
        [("metaschedule", "<candidates>", data, "<workload>", _WORKLOAD)],
        num_threads=1,
        tokenizer=tokenizer,
        vocab=vocab,
    )


@derived_object
class CostModel(PyCostModel):
    """A trained tcl cost model as a MetaSchedule cost model."""

    @enters_tvm
    def __init__(
        self,
        net: Any,
        vocab: Vocab,
        tokenizer: TokenizerConfig,
        *,
        online_steps: int = 0,
        lr: float = 1e-4,
        learn: bool | GPConfig = False,
    ) -> None:
        super().__init__()
        self.net, self.vocab, self.tokenizer = net, vocab.freeze(), tokenizer
        self.online = OnlineTrainer(net, OnlineConfig(steps=online_steps, lr=lr))
        gp_config = learn if isinstance(learn, GPConfig) else GPConfig()
        self.gp = TaskGP(gp_config) if learn is not False else None
        # the network's answers (score, and embedding for the GP) by program, until it changes
        self.cache = ScoreCache()
        self.calls = {"predict": 0, "update": 0, "candidates": 0}

    @classmethod
    def from_checkpoint(cls, path: str | None = None, **options: Any) -> CostModel:
        """A cost model from a tcl checkpoint; the packaged base model when ``path`` is None."""
        net, vocab, tokenizer, _ = models.load(path or models.base_model_path())
        return cls(net, vocab, tokenizer, **options)

    def load(self, path: str) -> None:
        """MetaSchedule's contract: replace this model by the checkpoint at ``path``."""
        self.net, self.vocab, self.tokenizer, _ = models.load(path)
        self.online = OnlineTrainer(self.net, self.online.config)
        self.cache.forget()

    def save(self, path: str) -> None:
        models.save(path, self.net, self.vocab, self.tokenizer)

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        self.calls["predict"] += 1
        self.calls["candidates"] += len(candidates)
        if not candidates:
            return np.zeros(0, dtype="float64")
        if self.gp is None:
            return self.cache.scores(
                context, candidates, lambda cs: predict(self.net, self._records(context, cs))
            )
        scores, embeddings = self._scored(context, candidates)
        return self.gp.rank_scores(task_of(context), scores, embeddings)

    def _scored(self, context: Any, candidates: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The network's scores and embeddings of ``candidates``, kept ones as kept."""

        def compute(cs: list[Any]) -> np.ndarray:
            scores, embeddings = predict_with_embeddings(self.net, self._records(context, cs))
            return np.column_stack([scores, embeddings])

        rows = self.cache.rows(context, candidates, compute)
        return rows[:, 0], rows[:, 1:]

    def _records(self, context: Any, candidates: list[Any]) -> RecordSet:
        """The candidates as records of the tuning target (a model that reads a platform
        descriptor, one moved across platforms by ``tcl distill``, reads the target's)."""
        target = getattr(context, "target", None)
        if target is None:
            raise ValueError("the tune context has no target: tcl's cost model needs one")
        return candidate_records(candidates, target, self.vocab, self.tokenizer)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        """Learns from a measured batch: the task's Gaussian process (``learn``), and with
        ``online_steps`` > 0, fine-tuning on it and on replayed earlier tasks."""
        self.calls["update"] += 1
        measured = [
            (c, float(np.mean([float(x) for x in r.run_secs])))
            for c, r in zip(candidates, results, strict=True)
            if r.error_msg is None and r.run_secs
        ]
        if self.gp is not None and measured:
            scores, embeddings = self._scored(context, [c for c, _ in measured])
            costs = np.array([cost for _, cost in measured])
            self.gp.add(task_of(context), scores, embeddings, costs)
        if self.online.config.steps <= 0 or not measured:
            return
        task = str(getattr(context, "task_name", None) or "task")
        rs = self._records(context, [c for c, _ in measured])
        self.online.add(task, rs, np.array([cost for _, cost in measured]))
        self.online.update(task)
        self.cache.forget()  # fine-tuned: its scores have changed


class _Load:
    """``CostModel.load(path=None)`` on the class builds a cost model from a checkpoint (as
    ``from_checkpoint``); ``cost_model.load(path)`` on an instance loads into it in place, as
    MetaSchedule's CostModel interface has it."""

    def __get__(self, obj: Any, owner: Any) -> Any:
        if obj is None:
            return owner.from_checkpoint
        return obj._inst.load


setattr(CostModel, "load", _Load())  # noqa: B010 (on the TVM wrapper class, after derived_object)
