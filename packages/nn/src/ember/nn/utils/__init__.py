"""Helpers around parameters (gradient clipping, flattening to one vector, hook handles) and sequences (``rnn``)."""
from . import rnn  # noqa: F401
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from .hooks import RemovableHandle  # noqa: F401
