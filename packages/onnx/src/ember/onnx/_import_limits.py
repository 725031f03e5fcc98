"""What one ``ember.onnx.load`` allows: where external data may be read from, how large a tensor a node may
declare, how many Scan body runs one call may make (nested Scans multiply, sibling Scans add up). Checked at
load where the sizes are constant, and by the handlers at call time before they allocate or loop."""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass

from .errors import OnnxImportError

DEFAULT_MAX_ELEMENTS = 2 ** 31
DEFAULT_MAX_SCAN_ITERATIONS = 10 ** 6

# the product of the trip counts of the Scans enclosing the body now running (1 outside any Scan)
_ENCLOSING_TRIPS = contextvars.ContextVar("ember_onnx_enclosing_trips", default=1)
# the Scan body runs of the call now running, in a one-element list (None outside a call)
_CALL_RUNS: contextvars.ContextVar[list | None] = contextvars.ContextVar("ember_onnx_call_runs", default=None)


@dataclass(frozen=True)
class ImportLimits:
    """``base_dir``: the folder external data must lie in (``None``: the model may have none);
    ``max_elements``: the most elements one tensor a node creates may have;
    ``max_scan_iterations``: the most Scan body runs one call may make, all Scans together."""

    base_dir: str | None = None
    max_elements: int = DEFAULT_MAX_ELEMENTS
    max_scan_iterations: int = DEFAULT_MAX_SCAN_ITERATIONS

    def __post_init__(self):
        for name in ("max_elements", "max_scan_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ember.onnx.load: {name} must be a positive int, got {value!r}")

    def check_elements(self, where, shape, what: str = "its output") -> None:
        """Raise, naming ``where`` (a node), when ``shape`` holds more than ``max_elements`` elements."""
        count = math.prod(int(d) for d in shape)
        if count > self.max_elements:
            raise OnnxImportError(f"{where}: {what} would have shape {list(shape)}, {count} elements, more than "
                                  f"max_elements={self.max_elements}; pass a larger max_elements to "
                                  "ember.onnx.load if the model really needs it")

    def check_trips(self, where, enclosing: int, trips: int) -> int:
        """The body runs of a Scan of ``trips`` steps run ``enclosing`` times; raises, naming ``where``, past
        ``max_scan_iterations``."""
        total = enclosing * trips
        if total > self.max_scan_iterations:
            nested = f", run {enclosing} times by the enclosing Scans," if enclosing > 1 else ""
            raise OnnxImportError(f"{where}: {trips} steps{nested} make {total} body runs, more than "
                                  f"max_scan_iterations={self.max_scan_iterations}")
        return total

    def check_runs(self, where, before: int, added: int) -> int:
        """``added`` body runs after ``before`` ones in the same call; raises, naming ``where``, past
        ``max_scan_iterations``. Returns the sum."""
        if before + added > self.max_scan_iterations:
            raise OnnxImportError(f"{where}: its {added} body runs after {before} of other Scans make "
                                  f"{before + added} in one call, more than "
                                  f"max_scan_iterations={self.max_scan_iterations}")
        return before + added

    @contextlib.contextmanager
    def call(self):
        """One call of the imported graph: its Scans share one budget of ``max_scan_iterations`` body runs."""
        token = _CALL_RUNS.set([0])
        try:
            yield
        finally:
            _CALL_RUNS.reset(token)

    @contextlib.contextmanager
    def scan_trips(self, node, trips: int):
        """Run a Scan's ``trips`` body runs inside this context; refuses, before the first, when they, times the
        enclosing Scans' trip counts or added to the call's earlier body runs, pass ``max_scan_iterations``."""
        total = self.check_trips(node, _ENCLOSING_TRIPS.get(), trips)
        runs = _CALL_RUNS.get()
        if runs is not None:
            runs[0] = self.check_runs(node, runs[0], trips)
        token = _ENCLOSING_TRIPS.set(total)  # after the checks, so that a refusal leaves nothing set
        try:
            yield
        finally:
            _ENCLOSING_TRIPS.reset(token)
