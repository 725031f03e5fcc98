"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

__all__: list = []
