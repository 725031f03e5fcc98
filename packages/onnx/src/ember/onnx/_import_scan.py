"""ONNX Scan (opset 9+): a subgraph run once per step of its scan inputs, carrying state from step to step.

The body runs with ember ops, step by step, so gradients flow through every
step to the parameters it reads from the enclosing graph.
"""
from __future__ import annotations

import ember

from ._import_node import handles


@handles("Scan", scoped=True)
def _scan(node, *inputs, scope):
    body = node.attr("body")
    count = node.attr("num_scan_inputs")
    states, xs = list(inputs[:len(inputs) - count]), inputs[len(inputs) - count:]
    in_axes = []
    for a, x in zip(node.attr("scan_input_axes") or [0] * count, xs):
        if not -x.ndim <= a < x.ndim:
            raise node.invalid(f"a scan input of shape {list(x.shape)} has no axis {a} to scan along")
        in_axes.append(a % x.ndim)
    in_reverse = node.attr("scan_input_directions") or [0] * count
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise node.invalid(f"scan inputs of different lengths {sorted(lengths)} along the scan axes")
    (length,) = lengths
    device = xs[0].device
    steps = [[] for _ in range(len(body.output_names) - len(states))]
    with node.limits.scan_trips(node, length):  # refuses nested Scans whose steps multiply past the limit
        for t in range(length):
            elements = [ember.select(x, a, length - 1 - t if r else t) for x, a, r in zip(xs, in_axes, in_reverse)]
            results = body(scope, states + elements, device)
            states = results[:len(states)]
            for collected, value in zip(steps, results[len(states):]):
                collected.append(value)
    out_axes = node.attr("scan_output_axes") or [0] * len(steps)
    out_reverse = node.attr("scan_output_directions") or [0] * len(steps)
    stacked = []
    for collected, axis, reverse in zip(steps, out_axes, out_reverse):
        if reverse:
            collected = collected[::-1]
        stacked.append(ember.stack(collected, dim=axis % (collected[0].ndim + 1)))
    return tuple(states) + tuple(stacked)
