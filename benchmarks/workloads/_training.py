"""The training step the workloads share, written once for ember and PyTorch."""


def training_step(model, opt, loss_fn, x, y):
    """A function of no arguments running one step: zero the gradients, forward, loss, backward, update."""
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step
