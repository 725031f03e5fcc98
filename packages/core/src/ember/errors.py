"""Exceptions ember raises beyond the standard ones PyTorch would raise."""


class EmberError(Exception):
    """Base class of ember's own errors."""


class PluginError(EmberError):
    """A plugin could not be registered, e.g. two plugins claim the same name."""


class DeviceMismatchError(EmberError, RuntimeError):
    """An op got tensors on different devices (ember never moves data implicitly)."""


class UnsupportedOpError(EmberError, NotImplementedError):
    """A backend cannot run an op (or a dtype)."""


class CheckpointError(EmberError, ValueError):
    """A checkpoint could not be saved or loaded: the file is truncated, corrupted, hostile or not safetensors.

    The message names the file and what was wrong with it.
    """


class OutOfMemoryError(EmberError, RuntimeError):
    """A device ran out of memory (PyTorch's ``torch.OutOfMemoryError``)."""
