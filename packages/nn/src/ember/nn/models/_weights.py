"""Loading a user-supplied safetensors weights file into a model, with errors that name the file."""
import os

import safetensors
import safetensors.numpy

import ember


def load_weights(model, path):
    """Load the safetensors file at ``path`` into ``model`` with a strict ``load_state_dict``; returns ``model``.

    The file must hold exactly the model's state-dict keys with the same shapes (for instance a file written
    by ``safetensors.torch.save_file(torch_model.state_dict(), path)`` from the same architecture). A missing
    file raises ``FileNotFoundError``; a file that is not safetensors raises ``ValueError``; keys or shapes
    that do not match raise ``RuntimeError``. All three name the path.

    >>> import tempfile, os, safetensors.numpy
    >>> import ember.nn.models as models
    >>> model = models.mlp(4, [8], num_classes=3)
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.safetensors")
    >>> safetensors.numpy.save_file({k: v.numpy() for k, v in model.state_dict().items()}, path)
    >>> models.mlp(4, [8], num_classes=3, weights=path)[1].weight.shape
    ember.Size([8, 4])
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"weights file {path!r} does not exist (ember.nn.models never downloads weights: "
                                "pass the path of a safetensors file you have)")
    try:
        arrays = safetensors.numpy.load_file(path)
    except (safetensors.SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"weights file {path!r} is not a readable safetensors file: {error}") from None
    state = {key: ember.from_numpy(array) for key, array in arrays.items()}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise RuntimeError(f"weights file {path!r} does not match this {type(model).__name__}: {error}") from None
    return model
