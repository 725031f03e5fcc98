"""PLACEHOLDER: BOHBSearcher (to be written by its owner; see /work/wt/COMMON-tune.md)."""
from ember import hookimpl


@hookimpl
def ember_tune_searchers():
    return {}
