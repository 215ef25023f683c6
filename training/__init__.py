"""What runs on the workstation: datasets, augmentation, losses, the trainer, evaluation
metrics and the synthetic multi-pose benchmark renderer. Imports ``padformer_edge.model``
and ``padformer_edge.detect``, never the daemon."""
