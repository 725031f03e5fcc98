"""``einsum``: Einstein summation, with PyTorch's parsing rules and error messages.

The equation is first normalised to explicit single-letter subscripts: ``...``
becomes fresh letters (right-aligned across operands), an implicit output
becomes the ellipsis letters followed by the once-used letters in sorted
order, and a size-1 dimension broadcast against a larger one gets a letter of
its own (summed over a size of 1). The gradient for each operand is again an
einsum, of the output gradient with the other operands, so double backward
works. The array API has no einsum, so this is a NumPy-only op: on other
backends it raises :class:`ember.UnsupportedOpError`.

>>> import ember
>>> a, b = ember.ones(2, 3), ember.ones(3, 4)
>>> ember.einsum("ij,jk->ik", a, b).shape
ember.Size([2, 4])
>>> ember.einsum("ii", ember.eye(3))
tensor(3.)
"""
from __future__ import annotations

import string

from ..amp.autocast_mode import autocast_casts
from ..autograd.function import Op
from ._common import Tensor
from .creation import eye, ones

__all__ = ["einsum"]

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


class Einsum(Op):
    name_ = "einsum"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, *arrays, terms=(), out="", sizes=None):
        ctx.terms, ctx.out, ctx.sizes = terms, out, sizes
        equation = ",".join(terms) + "->" + out
        return xp.asarray(xp.einsum(equation, *arrays, optimize=len(arrays) > 1))

    @staticmethod
    def backward(ctx, g):
        operands = ctx.saved_tensors
        return tuple(_operand_grad(ctx, g, operands, i) if need else None
                     for i, need in enumerate(ctx.needs_input_grad))


def _operand_grad(ctx, g, operands, i):
    """d(sum(g * einsum(...)))/d(operand i): an einsum of ``g`` with the other operands."""
    terms, sizes = ctx.terms, ctx.sizes
    in_terms = [ctx.out] + [t for j, t in enumerate(terms) if j != i]
    inputs = [g] + [op for j, op in enumerate(operands) if j != i]
    unused = iter(c for c in _LETTERS if c not in sizes)
    target = []
    for letter in terms[i]:
        if letter in target:  # a diagonal: write it out through an identity matrix
            fresh = next(unused)
            in_terms.append(letter + fresh)
            inputs.append(eye(sizes[letter], dtype=g.dtype, device=g.device))
            letter = fresh
        target.append(letter)
    covered = set("".join(in_terms))
    for letter in dict.fromkeys(target):
        if letter not in covered:  # summed over in this operand alone: its gradient broadcasts
            in_terms.append(letter)
            inputs.append(ones(sizes.get(letter, 1), dtype=g.dtype, device=g.device))
    return Einsum.apply(*inputs, terms=tuple(in_terms), out="".join(target), sizes=_sizes(in_terms, inputs))


def _sizes(terms, tensors):
    sizes = {}
    for term, t in zip(terms, tensors):
        for letter, n in zip(term, t.shape):
            if n != 1 or letter not in sizes:
                sizes[letter] = n
    return sizes


def _split_terms(equation, count):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    for i, c in enumerate(eq):
        if c not in _LETTERS and c not in ".,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                               f"subscripts must be in [a-zA-Z]")
    terms = lhs.split(",")
    if len(terms) > count:
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < count:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return terms, (rhs if arrow else None)


def _expand_ellipses(terms, operands):
    """Replace ``...`` by fresh letters, right-aligned across operands; returns (terms, ellipsis letters)."""
    used = set("".join(terms))
    spare = [c for c in _LETTERS if c not in used]
    counts = []
    for i, (term, op) in enumerate(zip(terms, operands)):
        if "..." in term:
            n = op.ndim - (len(term) - 3)
            if n < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term) - 3}) is more "
                                   f"than the number of dimensions ({op.ndim}) for operand {i}")
        elif len(term) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({op.ndim}) for operand {i} and no ellipsis was given")
        else:
            n = 0
        counts.append(n)
    width = max(counts, default=0)
    ell = "".join(spare[:width])
    out = [t.replace("...", ell[width - n:]) for t, n in zip(terms, counts)]
    for i, t in enumerate(out):
        if "." in t:
            raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any ellipsis")
    return out, ell


def _output_term(rhs, terms, ell):
    if rhs is None:
        once = [c for c in sorted(set("".join(terms)) - set(ell)) if "".join(terms).count(c) == 1]
        return ell + "".join(once)
    rhs = rhs.replace("...", ell)
    seen = set()
    for c in rhs:
        if c == ".":
            raise RuntimeError("einsum(): found '.' for output but it is not part of any ellipsis")
        if c in seen:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        if not any(c in t for t in terms):
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                               f"operand")
        seen.add(c)
    return rhs


def _broadcast(terms, operands):
    """Letter sizes, checking consistency; a size-1 dim broadcast against a larger one gets its own letter."""
    sizes = {}
    for i, (term, op) in enumerate(zip(terms, operands)):
        mine = {}
        for c, n in zip(term, op.shape):
            if c in mine and mine[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                   f"match, {mine[c]} != {n}")
            mine[c] = n
            seen = sizes.get(c, 1)
            if n != 1 and seen != 1 and n != seen:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not broadcast "
                                   f"with previously seen size {seen}")
            if n != 1 or c not in sizes:
                sizes[c] = n
    spare = iter(c for c in _LETTERS if c not in sizes)
    out = []
    for term, op in zip(terms, operands):
        renamed = {c: next(spare) for c, n in zip(term, op.shape) if n == 1 and sizes[c] != 1}
        for c in renamed.values():
            sizes[c] = 1
        out.append("".join(renamed.get(c, c) for c in term))
    return out, sizes


def einsum(equation, *operands):
    """Sum of products of ``operands`` over the subscripts that the equation leaves out of the output.

    ``operands`` may also be passed as one list. Subscripts are letters; ``...``
    stands for the broadcast leading dimensions; without ``->`` the output is
    the subscripts used once, in alphabetical order. All operands must share a
    dtype. NumPy backend only (the array API standard has no einsum).

    >>> import ember
    >>> x = ember.tensor([[1., 2.], [3., 4.]])
    >>> ember.einsum("ij->ji", x)
    tensor([[1., 3.],
            [2., 4.]])
    >>> ember.einsum("i,i->", [ember.tensor([1., 2.]), ember.tensor([3., 4.])])
    tensor(11.)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(op).__name__}")
    terms, rhs = _split_terms(equation, len(operands))
    terms, ell = _expand_ellipses(terms, operands)
    out = _output_term(rhs, terms, ell)
    for op in operands[1:]:
        if op._dtype is not operands[0]._dtype and not autocast_casts("einsum", op):
            raise RuntimeError(f"expected scalar type {operands[0]._dtype.scalar_type_name} but found "
                               f"{op._dtype.scalar_type_name}")
    terms, sizes = _broadcast(terms, operands)
    return Einsum.apply(*operands, terms=tuple(terms), out=out, sizes=sizes)
