"""Loading a user-supplied safetensors weights file into a model, with errors that name the file."""
import os

import ember
from ember.errors import CheckpointError


def load_weights(model, path):
    """Load the safetensors file at ``path`` into ``model`` with a strict ``load_state_dict``; returns ``model``.

    The file must hold exactly the model's state-dict keys with the same shapes (for instance a file written
    by ``safetensors.torch.save_file(torch_model.state_dict(), path)`` from the same architecture). A missing
    file raises ``FileNotFoundError``; a file that is not safetensors raises ``ember.errors.CheckpointError`` (a
    ``ValueError``); keys or shapes that do not match raise ``RuntimeError``. All three name the path. The file
    is read with ``ember.load``, so ``ember.save(model.state_dict(), path)`` writes one too, and every dtype
    safetensors has (bfloat16 included) loads.

    >>> import tempfile, os, ember
    >>> import ember.nn.models as models
    >>> model = models.mlp(4, [8], num_classes=3)
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.safetensors")
    >>> ember.save(model.state_dict(), path)
    >>> models.mlp(4, [8], num_classes=3, weights=path)[1].weight.shape
    ember.Size([8, 4])
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"weights file {path!r} does not exist (ember.nn.models never downloads weights: "
                                "pass the path of a safetensors file you have)")
    try:
        state = ember.load(path)
    except CheckpointError as error:
        raise CheckpointError(f"weights file {path!r} is not a readable safetensors file: {error}") from None
    if not isinstance(state, dict) or not all(isinstance(value, ember.Tensor) for value in state.values()):
        top = list(state)[:5] if isinstance(state, dict) else type(state).__name__
        raise RuntimeError(f"weights file {path!r} holds a checkpoint ({top}), not a flat state dict of tensors: "
                           "load it with ember.load and pass its model state dict to load_state_dict")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise RuntimeError(f"weights file {path!r} does not match this {type(model).__name__}: {error}") from None
    return model
