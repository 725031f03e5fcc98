"""Random number generators: one default :class:`Generator` per device, seeded by ``manual_seed``.

Each device gets its own default generator, made lazily by its backend
(``Backend.create_rng``). :func:`manual_seed` seeds all of them, those made
later included; devices other than index 0 draw from a stream derived from the
seed, so ``cpu:0`` and ``cpu:1`` are independent yet reproducible.

>>> import ember
>>> g = ember.manual_seed(0)
>>> a = ember.rand(2)
>>> _ = ember.manual_seed(0)
>>> (ember.rand(2) == a).all().item()
True
>>> ember.initial_seed()
0
"""
from __future__ import annotations

import contextlib
import secrets

import numpy as np

from ._device import as_device
from ._dtype import uint8
from ._tensor import Tensor
from .ops.creation import from_numpy

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]

#: the seed a generator starts from before anyone seeds it (PyTorch's value)
DEFAULT_SEED = 67280421310721
_U64 = 1 << 64


def _check_seed(value) -> int:
    """``value`` as a seed in [0, 2**64); negative ints wrap (two's complement), as in PyTorch."""
    s = int(value)
    if not -(1 << 63) <= s < _U64:
        raise ValueError(f"Overflow when unpacking long long: a seed must be an int in [-2**63, 2**64), got {s}")
    return s % _U64


def _stream_seed(s: int, device) -> int:
    """The seed a device's bit generator starts from: ``s`` itself on index 0, derived from ``s`` elsewhere."""
    index = device.index or 0
    if index == 0:
        return s
    return int(np.random.SeedSequence(s, spawn_key=(index,)).generate_state(1, np.uint64)[0])


class Generator:
    """A random number generator on a device; pass it as ``generator=`` to random ops.

    >>> import ember
    >>> g = ember.Generator().manual_seed(42)
    >>> a = ember.rand(3, generator=g)
    >>> b = ember.rand(3, generator=g.manual_seed(42))
    >>> (a == b).all().item(), g.initial_seed(), g.device
    (True, 42, device(type='cpu'))
    """

    __slots__ = ("_device", "_seed", "_rng")

    def __init__(self, device="cpu"):
        dev = as_device(device)
        dev.backend  # noqa: B018 - fail now, with the backend's message, for a device that does not exist
        self._device = dev
        self._seed = DEFAULT_SEED
        self._rng = None

    @classmethod
    def _lazy(cls, device, seed_value):
        """A generator whose backend generator is made on first use (safe during ``import ember``)."""
        g = object.__new__(cls)
        g._device, g._seed, g._rng = device, seed_value, None
        return g

    @property
    def device(self):
        return self._device

    @property
    def rng(self):
        """The backend's generator object (NumPy ``Generator`` methods)."""
        rng = self._rng
        if rng is None:
            rng = self._rng = self._device.backend.create_rng(self._device, _stream_seed(self._seed, self._device))
        return rng

    def manual_seed(self, seed):
        """Seed this generator; returns ``self``."""
        self._seed = _check_seed(seed)
        self._rng = None
        return self

    def seed(self) -> int:
        """Seed from a non-deterministic source; returns that seed."""
        s = secrets.randbits(64)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a 1-D ``ember.uint8`` tensor (give it to :meth:`set_state`)."""
        raw = self._seed.to_bytes(8, "little") + bytes(self._device.backend.rng_get_state(self.rng))
        return from_numpy(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state`; returns ``self``."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected an ember.ByteTensor (a uint8 tensor from get_state()), "
                            f"but got {type(new_state).__name__}")
        if new_state.dtype is not uint8:
            raise TypeError(f"RNG state must be an ember.ByteTensor (uint8), got dtype {new_state.dtype!r}")
        raw = new_state.detach().numpy(force=True).tobytes()
        if len(raw) <= 8:
            raise RuntimeError(f"invalid RNG state for device {self._device}: {len(raw)} bytes is too short; "
                               "expected a state made by get_state()")
        rng = self._device.backend.create_rng(self._device, 0)
        try:
            self._device.backend.rng_set_state(rng, raw[8:])
        except Exception as exc:
            raise RuntimeError(f"invalid RNG state for device {self._device}: {exc}; "
                               "expected a state made by get_state()") from None
        self._seed, self._rng = int.from_bytes(raw[:8], "little"), rng
        return self

    def __repr__(self):
        return f"<ember.Generator device={self._device} initial_seed={self._seed}>"


Generator.__module__ = "ember"

_base_seed = DEFAULT_SEED
_defaults: dict = {}  # device key -> that device's default Generator

#: the default generator of the CPU (``torch.default_generator``)
default_generator = _defaults[("cpu", 0)] = Generator._lazy(as_device("cpu"), DEFAULT_SEED)


def default_generator_for(device) -> Generator:
    """The default generator of ``device`` (made and seeded on first use)."""
    dev = as_device(device)
    g = _defaults.get(dev.key)
    if g is None:
        dev.backend  # noqa: B018 - check that the device exists before keeping a generator for it
        g = _defaults[dev.key] = Generator._lazy(dev, _base_seed)
    return g


def manual_seed(seed) -> Generator:
    """Seed the default generator of every device (and those made later); returns the CPU one.

    >>> import ember
    >>> ember.manual_seed(7).initial_seed()
    7
    """
    global _base_seed
    _base_seed = _check_seed(seed)
    for g in _defaults.values():
        g.manual_seed(_base_seed)
    return default_generator


def seed() -> int:
    """Seed every device's default generator from a non-deterministic source; returns the seed."""
    s = secrets.randbits(64)
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the CPU's default generator."""
    return default_generator.initial_seed()


def get_rng_state(device="cpu"):
    """The state of ``device``'s default generator as an ``ember.uint8`` tensor."""
    return default_generator_for(device).get_state()


def set_rng_state(new_state, device="cpu") -> None:
    """Restore ``device``'s default generator from :func:`get_rng_state`'s tensor."""
    default_generator_for(device).set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True):
    """Within the block, random ops on the CPU and ``devices`` do not change their default generators' states.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> with ember.random.fork_rng():
    ...     _ = ember.rand(5)
    >>> a = ember.rand(1); _ = ember.manual_seed(0)
    >>> (ember.rand(1) == a).all().item()
    True
    """
    if not enabled:
        yield
        return
    gens = {default_generator_for("cpu")}
    gens.update(default_generator_for(d) for d in (devices or ()))
    saved = [(g, g.get_state()) for g in gens]
    try:
        yield
    finally:
        for g, state in saved:
            g.set_state(state)
