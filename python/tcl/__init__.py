"""tcl: fast, cheap TVM tensor-program tuning.

The record core (``tcl.records``) parses TenSet/Ansor logs and MetaSchedule databases in C++ and
tokenizes each schedule into step vectors for the cost model.
"""

from tcl.errors import CheckpointError, FormatVersionError, RecordError, TclError
from tcl.records import RecordSet, TaskTable, read_records, sample_data_path
from tcl.splits import split_by_target, split_by_task, split_within_task
from tcl.tokenizer import TokenizerConfig, Vocab

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
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
]
