"""Per-device generators of the CUDA backend (on the CuPy stand-in)."""
import ember


def test_manual_seed_all_seeds_every_gpu(cuda_standin):
    ember.cuda.manual_seed_all(3)
    a0, a1 = ember.randn(4, device="cuda:0"), ember.randn(4, device="cuda:1")
    ember.cuda.manual_seed_all(3)
    b0, b1 = ember.randn(4, device="cuda:0"), ember.randn(4, device="cuda:1")
    assert ember.equal(a0.cpu(), b0.cpu()) and ember.equal(a1.cpu(), b1.cpu())
    assert a1._data.device.id == 1


def test_manual_seed_seeds_only_the_current_gpu(cuda_standin):
    ember.cuda.manual_seed_all(5)
    first1 = ember.rand(3, device="cuda:1")
    ember.cuda.manual_seed_all(5)
    ember.cuda.manual_seed(6)  # cuda:0 only
    assert ember.equal(ember.rand(3, device="cuda:1").cpu(), first1.cpu())
    g = ember.random.default_generator_for("cuda:0")
    assert g.initial_seed() == 6
