"""What one ``ember.onnx.load`` allows: where external data may be read from, how large a tensor a node may
declare, how many Scan body runs nested Scans may multiply to. Checked at load where the sizes are constant,
and by the handlers at call time before they allocate."""
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


@dataclass(frozen=True)
class ImportLimits:
    """``base_dir``: the folder external data must lie in (``None``: the model may have none);
    ``max_elements``: the most elements one tensor a node creates may have;
    ``max_scan_iterations``: the most body runs a Scan, times the trip counts of the Scans around it, may make."""

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

    @contextlib.contextmanager
    def scan_trips(self, node, trips: int):
        """Run a Scan's ``trips`` body runs inside this context; refuses, before the first, when they times the
        enclosing Scans' trip counts pass ``self.max_scan_iterations``."""
        token = _ENCLOSING_TRIPS.set(self.check_trips(node, _ENCLOSING_TRIPS.get(), trips))
        try:
            yield
        finally:
            _ENCLOSING_TRIPS.reset(token)
