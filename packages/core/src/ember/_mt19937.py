"""The CPU random engine: MT19937 with PyTorch's seeding, word order and state layout.

PyTorch's CPU generator is the standard 32-bit Mersenne Twister seeded with
the low 32 bits of the seed (``init_genrand``), which NumPy's legacy seeding
reproduces; NumPy's ``MT19937`` bit generator then hands out the same 32-bit
words in bulk. A 64-bit draw is two words, the first one high. The engine also
keeps the cached second value of the scalar Box-Muller transform, as PyTorch
does, and reads and writes PyTorch's 5056-byte ``CPUGeneratorImplState``.

>>> e = MT19937Engine(0)
>>> int(e.words(1)[0])  # the first word after torch.manual_seed(0)
2357136044
"""
from __future__ import annotations

import struct

import numpy as np

__all__ = ["MT19937Engine", "STATE_BYTES"]

_N = 624
# the_initial_seed u64, left i32, seeded i32, next u64, state[624] u64, normal_x/y/rho f64, normal_is_valid i32
# (+4 padding), next_float_normal_sample f32, is_next_float_normal_sample_valid bool (+3 padding)
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<dddi4xf?3x")
STATE_BYTES = _HEAD.size + 8 * _N + _TAIL.size
assert STATE_BYTES == 5056  # PyTorch's sizeof(CPUGeneratorImplState) on 64-bit platforms


class MT19937Engine:
    """32-bit words of PyTorch's CPU generator for ``seed``; the cached Box-Muller value in ``normal_cache``."""

    __slots__ = ("seed", "normal_cache", "_bits", "_draw", "_fresh")

    def __init__(self, seed: int):
        self.seed = seed
        #: the second value of the last scalar Box-Muller pair, waiting to be returned (None: draw a new pair)
        self.normal_cache: float | None = None
        self._bits = np.random.MT19937()
        self._bits.state = np.random.RandomState(seed & 0xFFFFFFFF).get_state(legacy=False)
        # full-range integers are the raw words: a 32-bit word each, or two words (the first one high) for uint64
        self._draw = np.random.Generator(self._bits).integers
        self._fresh = True  # seeded and not drawn from: PyTorch's `next` is 0 then, not 624

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words as uint32."""
        self._fresh = False
        return self._draw(0, 1 << 32, n, dtype=np.uint32)

    def words64(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit draws (``random64``: two words, the first one high) as uint64."""
        self._fresh = False
        return self._draw(0, 1 << 64, n, dtype=np.uint64)

    def run_kernel(self, kernel, out: np.ndarray, *args) -> np.ndarray:
        """Fill ``out`` by a plugin's compiled ``kernel(key, pos, out, *args) -> pos`` from this engine's words.

        The kernel works on a copy of the MT19937 state (its 624 words and position) and the engine takes
        the state it leaves, so that NumPy's draws and the kernel's continue one stream.
        """
        state = self._bits.state["state"]
        key = np.array(state["key"], dtype=np.uint32)
        pos = kernel(key, int(state["pos"]), out, *args)
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": int(pos)}}
        self._fresh = False
        return out

    def get_state(self) -> bytes:
        """PyTorch's ``CPUGeneratorImplState`` bytes for this engine."""
        st = self._bits.state["state"]
        pos = int(st["pos"])
        left, nxt = _N - pos + 1, (0 if self._fresh else pos)
        cache = self.normal_cache
        head = _HEAD.pack(self.seed, left, 1, nxt)
        tail = _TAIL.pack(0.0, 0.0 if cache is None else cache, 0.0, cache is not None, 0.0, False)
        return head + np.asarray(st["key"], dtype="<u8").tobytes() + tail

    @classmethod
    def from_state(cls, raw: bytes) -> MT19937Engine:
        """The engine that :meth:`get_state`'s bytes (or ``torch.get_rng_state()``'s) describe."""
        if len(raw) != STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        seed, left, seeded, nxt = _HEAD.unpack_from(raw, 0)
        key = np.frombuffer(raw, dtype="<u8", count=_N, offset=_HEAD.size)
        _, normal_y, _, normal_valid, _, _ = _TAIL.unpack_from(raw, _HEAD.size + 8 * _N)
        if not (seeded and 0 < left <= _N and nxt <= _N) or np.any(key >> np.uint64(32)):
            raise RuntimeError("Invalid mt19937 state")
        engine = cls.__new__(cls)
        engine.seed = seed
        engine.normal_cache = normal_y if normal_valid else None
        engine._bits = np.random.MT19937()
        engine._bits.state = {"bit_generator": "MT19937",
                              "state": {"key": key.astype(np.uint32), "pos": _N - left + 1}}
        engine._draw = np.random.Generator(engine._bits).integers
        engine._fresh = nxt == 0 and left == 1
        return engine
