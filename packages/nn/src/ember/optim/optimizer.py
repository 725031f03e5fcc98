"""Optimizer: parameter groups, state, zero_grad, state_dict / load_state_dict, step hooks."""

__all__: list = []
