"""Helpers around parameters: gradient clipping, flattening parameters to one vector, hook handles."""
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from .hooks import RemovableHandle  # noqa: F401
