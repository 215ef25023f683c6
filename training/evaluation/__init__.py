"""Scoring a rendered test split against N references per class, as ``padformer-edge
eval`` and the quality benchmarks do: the protocol, its metrics and report, and the
scorers it compares (PADFormer through its ``Detector``, the comparator, PatchCore and the
plain reference difference)."""
