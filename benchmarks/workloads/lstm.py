"""Workload 5: LSTM(input 64, hidden 128) on a sequence of 32, batch 16: forward and backward.

The loss is the sum of the outputs; the parameters' gradients are reset (to None) before each pass so
they do not accumulate. No optimizer step.
"""
NAME = "lstm"
TITLE = "LSTM(64, 128), seq 32, batch 16: forward + backward of outputs.sum()"
TARGETS = (1.0, 1.2)

SEQ, BATCH, INPUT, HIDDEN = 32, 16, 64, 128


def setup(lib):
    """A forward and backward pass of the LSTM in ``lib`` (ember or torch)."""
    lib.manual_seed(0)
    model = lib.nn.LSTM(INPUT, HIDDEN)
    x = lib.randn(SEQ, BATCH, INPUT)

    def step():
        model.zero_grad()
        out, _ = model(x)
        out.sum().backward()
    return step
