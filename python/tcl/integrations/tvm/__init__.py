"""TVM MetaSchedule: tcl's model as a cost model (``adapter``), measuring and storing programs
(``measure``), TVM's own XGB/MLP baselines (``baselines``, ``mlp_state``), the log and progress
bar (``console``), and the fixes applied where tcl enters TVM (``patches``). Only ``adapter``
(a subclass of MetaSchedule's ``PyCostModel``) imports TVM when imported; the others import it
when used.
"""
