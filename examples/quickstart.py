"""ember quickstart: logistic regression trained with autograd alone.

Two clouds of points, labelled by which side of a line they fall on; a weight
vector and a bias learn that line by gradient descent. Everything is the
PyTorch you know, with ``torch`` spelled ``ember``.

    python examples/quickstart.py
"""
import ember

ember.manual_seed(0)

# --- data: 400 points in 2-D, label 1 where 2*x0 - 3*x1 + 0.5 > 0 ---------------
n_points = 400
x = ember.randn(n_points, 2)
true_w, true_b = ember.tensor([[2.0], [-3.0]]), 0.5
y = (x @ true_w + true_b > 0).float()  # (400, 1) of 0.0 / 1.0

# --- model: p(label = 1 | x) = sigmoid(x @ w + b) ----------------------------------
w = ember.zeros(2, 1, requires_grad=True)
b = ember.zeros(1, requires_grad=True)
learning_rate = 0.5


def binary_cross_entropy_with_logits(logits, targets):
    """mean(log(1 + e^z) - y*z): the logistic loss written on the logits, with ember ops."""
    return (ember.log1p(ember.exp(logits)) - targets * logits).mean()


for step in range(201):
    loss = binary_cross_entropy_with_logits(x @ w + b, y)
    loss.backward()  # fills w.grad and b.grad
    with ember.no_grad():  # the update itself is not part of the model
        w -= learning_rate * w.grad
        b -= learning_rate * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if step % 25 == 0:
        print(f"step {step:3d}   loss {loss.item():.4f}")

with ember.no_grad():
    predictions = (x @ w + b > 0).float()
    accuracy = (predictions == y).float().mean().item()
w0, w1 = w.flatten().tolist()
print(f"accuracy {accuracy:.3f}   learned boundary {w0:.2f}*x0 {w1:+.2f}*x1 {b.item():+.2f} = 0 "
      f"(true: 2*x0 - 3*x1 + 0.5 = 0, up to scale)")
