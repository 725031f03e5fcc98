"""Learning-rate schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, LinearLR, OneCycleLR, SequentialLR, ReduceLROnPlateau."""

__all__: list = []
