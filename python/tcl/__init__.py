"""tcl: fast, cheap TVM tensor-program tuning.

The packages follow the pipeline: ``records`` (TenSet/Ansor logs and MetaSchedule databases,
parsed and tokenized by the C++ core) → ``sampling`` (RDU) → ``model`` → ``training`` →
``integrations.tvm`` (MetaSchedule) → ``tuning`` (collect, tune) → ``cli``.

>>> import tcl
>>> rs = tcl.read_records("runs/")                      # records → tokens
>>> report = tcl.tune(net, (x,), trials=64, work_dir="net-tune")   # a library out
"""

from typing import TYPE_CHECKING, Any

from tcl.errors import CheckpointError, FormatVersionError, RecordError, TclError
from tcl.records import RecordSet, TaskTable, read_records, sample_data_path
from tcl.records.splits import split_by_target, split_by_task, split_within_task
from tcl.records.tokenizer import TokenizerConfig, Vocab

if TYPE_CHECKING:
    from tcl.integrations.tvm.adapter import CostModel
    from tcl.tuning.tune import tune

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # tune and CostModel need TVM (and torch): imported on first use, so that reading records
    # does not pay for them.
    if name == "tune":
        from tcl.tuning.tune import tune

        return tune
    if name == "CostModel":
        from tcl.integrations.tvm.adapter import CostModel

        return CostModel
    raise AttributeError(f"module 'tcl' has no attribute {name!r}")


__all__ = [
    "CheckpointError",
    "CostModel",
    "FormatVersionError",
    "RecordError",
    "RecordSet",
    "TaskTable",
    "TclError",
    "TokenizerConfig",
    "Vocab",
    "__version__",
    "read_records",
    "sample_data_path",
    "split_by_target",
    "split_by_task",
    "split_within_task",
    "tune",
]
