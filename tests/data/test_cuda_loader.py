"""``DataLoader(pin_memory=True)`` with the CUDA backend: batches really pinned, copied without blocking."""
import ember
from ember.data import DataLoader, TensorDataset


def test_pinned_batches_move_to_the_gpu(cuda_device):
    ds = TensorDataset(ember.arange(20.0).reshape(10, 2), ember.arange(10))
    seen = []
    for x, y in DataLoader(ds, batch_size=4, pin_memory=True):
        assert x.is_pinned() and y.is_pinned()
        xg, yg = x.to(cuda_device, non_blocking=True), y.to(cuda_device, non_blocking=True)
        ember.cuda.synchronize()
        seen.extend(yg.cpu().tolist())
        assert xg.device.type == "cuda"
    assert seen == list(range(10))
