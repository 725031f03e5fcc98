"""ember's ops, one module per family; each attaches its functions to ``Tensor`` as methods."""
