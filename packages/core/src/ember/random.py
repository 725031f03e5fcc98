"""Random number generators: one default :class:`Generator` per device, seeded by ``manual_seed``.

A generator is PyTorch's CPU generator (:class:`ember._mt19937.MT19937Engine`:
MT19937 seeded with the seed's low 32 bits), so after ``manual_seed(s)`` the
random ops on the CPU give PyTorch's numbers for ``torch.manual_seed(s)``, and
``get_state`` returns PyTorch's 5056-byte state. Each device gets its own
default generator, made lazily; :func:`manual_seed` seeds all of them, those
made later included; devices other than index 0 draw from a stream derived from
the seed, so ``cpu:0`` and ``cpu:1`` are independent yet reproducible. Other
backends draw on the host with the same engine (PyTorch's CUDA generator is
Philox, which ember does not imitate). Until seeded, a process starts from a
fresh random seed, as PyTorch's does.

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
from ._mt19937 import MT19937Engine
from ._tensor import Tensor
from .ops.creation import from_numpy

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]

#: the seed ``Generator()`` starts from, as ``torch.Generator()`` (the default generators start from a fresh one)
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
    """A random number generator on a device, as ``torch.Generator``; pass it as ``generator=`` to random ops.

    A new generator starts from PyTorch's seed 67280421310721; the default
    generators start from a fresh random seed per process, as PyTorch's do.

    >>> import ember
    >>> g = ember.Generator().manual_seed(42)
    >>> a = ember.rand(3, generator=g)
    >>> b = ember.rand(3, generator=g.manual_seed(42))
    >>> (a == b).all().item(), g.initial_seed(), g.device
    (True, 42, device(type='cpu'))
    """

    __slots__ = ("_device", "_seed", "_engine")

    def __init__(self, device="cpu"):
        dev = as_device(device)
        dev.backend  # noqa: B018 - fail now, with the backend's message, for a device that does not exist
        self._device = dev
        self._seed = DEFAULT_SEED
        self._engine = None

    @classmethod
    def _lazy(cls, device, seed_value):
        """A generator whose engine is made on first use (safe during ``import ember``)."""
        g = object.__new__(cls)
        g._device, g._seed, g._engine = device, seed_value, None
        return g

    @property
    def device(self):
        return self._device

    @property
    def engine(self) -> MT19937Engine:
        """The MT19937 engine that the random ops draw from."""
        engine = self._engine
        if engine is None:
            engine = self._engine = MT19937Engine(_stream_seed(self._seed, self._device))
        return engine

    def manual_seed(self, seed):
        """Seed this generator (an int in [-2**63, 2**64); MT19937 uses its low 32 bits); returns ``self``."""
        self._seed = _check_seed(seed)
        self._engine = None
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
        """The generator's state as a 1-D ``ember.uint8`` tensor of 5056 bytes, in PyTorch's CPU layout.

        ``torch.Generator().set_state(torch.from_numpy(state.numpy()))`` continues the same stream in PyTorch,
        and the other way round.
        """
        return from_numpy(np.frombuffer(self.engine.get_state(), dtype=np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state` (or PyTorch's ``get_state()``); returns ``self``."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected an ember.ByteTensor (a uint8 tensor from get_state()), "
                            f"but got {type(new_state).__name__}")
        if new_state.dtype is not uint8:
            raise TypeError(f"RNG state must be an ember.ByteTensor (uint8), got dtype {new_state.dtype!r}")
        engine = MT19937Engine.from_state(new_state.detach().numpy(force=True).tobytes())
        self._seed, self._engine = engine.seed, engine
        return self

    def __repr__(self):
        return f"<ember.Generator device={self._device} initial_seed={self._seed}>"


Generator.__module__ = "ember"

_base_seed = secrets.randbits(64)  # a fresh seed per process until manual_seed, as in PyTorch
_defaults: dict = {}  # device key -> that device's default Generator

#: the default generator of the CPU (``torch.default_generator``)
default_generator = _defaults[("cpu", 0)] = Generator._lazy(as_device("cpu"), _base_seed)


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
