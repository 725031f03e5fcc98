"""Creation functions: logspace against NumPy, on every backend, and its errors."""
import numpy as np
import pytest

import ember


@pytest.mark.parametrize("args, kwargs", [
    ((0, 2, 3), {}), ((0, 3, 4), {"base": 2}), ((-1, 1, 5), {"dtype": ember.float64}), ((1, 2, 1), {}),
    ((1, 2, 0), {}),
])
def test_logspace_matches_numpy(device, args, kwargs):
    out = ember.logspace(*args, device=device, **kwargs)
    want = kwargs.get("dtype", ember.float32)
    assert out.dtype == want and out.device.type == device
    ref = np.logspace(*args, base=kwargs.get("base", 10.0))
    np.testing.assert_allclose(out.numpy(force=True), ref, rtol=1e-6)


def test_logspace_rejects_negative_steps():
    with pytest.raises(RuntimeError, match="number of steps must be (a )?non-negative"):
        ember.logspace(0, 1, -2)
