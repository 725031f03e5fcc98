"""``ember.load(map_location=...)`` onto CUDA devices: the stand-in in CI, the real GPU where one is."""
import ember


def test_load_onto_a_gpu(cuda_device, tmp_path):
    path = tmp_path / "w.pt"
    ember.save({"w": ember.arange(4.0), "b": ember.ones(2)}, path)
    target = "cuda:1" if ember.cuda.device_count() > 1 else "cuda:0"
    state = ember.load(path, map_location=target)
    assert state["w"].device == ember.device(target) and state["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    back = ember.load(path, map_location="cuda")
    assert back["b"].device.type == "cuda"
    ember.save({k: v for k, v in state.items()}, tmp_path / "again.pt")  # saving GPU tensors works too
    assert ember.load(tmp_path / "again.pt")["w"].device == ember.device("cpu")
