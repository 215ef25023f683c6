"""What runs on the workstation: datasets, augmentation, losses, the trainer, evaluation
metrics and the synthetic multi-pose benchmark renderer. Imports ``padformer_edge.model``
and ``padformer_edge.detect``, never the daemon.

The repository's ``training/`` folder installs as ``padformer_edge_training`` (pyproject's
``package-dir``). From the repository's root the folder can also be imported by its own
name, which would load every module a second time beside the installed one, with its own
state; so this package refuses any other name.
"""

if __name__ != "padformer_edge_training":
    raise ImportError(
        f"'{__name__}' is the repository's training/ folder; import padformer_edge_training "
        "(pip install -e . in the repository makes it importable) instead."
    )
