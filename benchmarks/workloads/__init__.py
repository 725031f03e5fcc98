"""The workloads of ``benchmarks/run.py``, one module each.

A workload module defines:

- ``NAME`` (what ``-k`` matches) and ``TITLE`` (one line for the table's legend);
- ``TARGETS``: ``(one_thread, two_threads)``: the largest ratio of ember's time to PyTorch's that meets the
  target at one thread on the process CPU clock, and at two threads on the wall clock (None: no target);
- ``setup(lib)``: builds the model and data with ``lib`` (the ``ember`` or the ``torch`` module, which
  share the API) and returns a function of no arguments that runs the workload once. The model is
  written once against ``lib``, so ember and PyTorch run literally the same code;
- optionally ``setup_numpy()``: the same workload written by hand in NumPy (the practical limit);
- optionally ``details(libs, timer)``: further figures (FLOP/s, memory) as a list of dicts, each with
  ``name``, ``text`` (one line for the report), ``passed`` (True, False or None) and the figures.
  ``libs`` maps ``"ember"`` (and ``"torch"`` when it imports) to the module; ``timer(fns)`` times a
  dict of functions alternately, as the main table does, and returns their median seconds.
"""
from . import cnn, lstm, mlp, per_op, resnet18, resnet18_compiled, resnet18_openvino, tiny

#: every workload module, in table order
WORKLOADS = [mlp, cnn, tiny, resnet18, resnet18_compiled, resnet18_openvino, lstm, per_op.ADD, per_op.MUL_SUM_BACKWARD]
