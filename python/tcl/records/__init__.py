"""Records: measured programs from TenSet/Ansor logs and MetaSchedule databases.

The flow inside: ``sources`` (user paths → record files, read in pieces) → ``reading`` (the C++
core's ``RecordReader``) → ``recordset`` (``RecordSet``: columns, tasks, tokens) with
``tokenizer`` (kinds vocabulary, settings); ``binary`` saves and loads them, ``store`` is the
append-only collection store, ``dataset`` joins records with network manifests, ``splits``
holds them out, ``stats`` summarizes; ``reference`` and ``reference_tokens`` are the
pure-Python twin of the C++ reader and tokenizer.
"""

from tcl.records.recordset import (
    ReadReport,
    RecordSet,
    TaskTable,
    read_inputs,
    read_records,
    rows_by_task,
    sample_data_path,
)

__all__ = [
    "ReadReport",
    "RecordSet",
    "TaskTable",
    "read_inputs",
    "read_records",
    "rows_by_task",
    "sample_data_path",
]
