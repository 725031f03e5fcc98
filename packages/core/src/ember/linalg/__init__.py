"""``ember.linalg``: PyTorch's ``torch.linalg`` on the backend's ``linalg`` extension.

Inverses and solvers (``inv``, ``det``, ``slogdet``, ``solve``), factorisations
(``cholesky``, ``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``) and norms
(``vector_norm``, ``matrix_norm``, ``norm``), batched over leading dimensions
and differentiable (gradients checked by finite differences, double backward
included). Real dtypes only. A singular or non-positive-definite input raises
:class:`ember.linalg.LinAlgError` (a ``RuntimeError``).

>>> import ember
>>> A = ember.tensor([[4., 1.], [1., 3.]])
>>> ember.linalg.solve(A, ember.tensor([1., 2.]))
tensor([0.0909, 0.6364])
"""
from ..ops.matmul import matmul
from ._checks import LinAlgError
from ._decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from ._inverse import det, inv, slogdet, solve
from ._norms import matrix_norm, norm, tensor_norm, vector_norm  # noqa: F401  (tensor_norm: ember.norm)

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
           "vector_norm", "matrix_norm", "norm", "matmul"]

inverse = inv  # ``ember.inverse`` (exported by ``ember`` with ``det``, ``slogdet`` and ``tensor_norm`` as ``norm``)
