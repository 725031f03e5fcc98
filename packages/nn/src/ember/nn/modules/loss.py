"""Loss modules: MSELoss, L1Loss, CrossEntropyLoss, ... (thin wrappers over ember.nn.functional)."""

__all__: list = []
