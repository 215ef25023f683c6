"""The file names of an export, in a module without torch, so the line runtime and the
torch exporter name the same files from one place."""

REFERENCE_GRAPH = "references.onnx"
TERMS_GRAPH = "reference_terms.onnx"
QUERY_GRAPH = "query.onnx"
FEATURES_GRAPH = "features.onnx"
CELLS_GRAPH = "cells.onnx"
MANIFEST = "manifest.json"
PASSES_FILE = "passes.safetensors"
SCORING_FILE = "scoring.json"
SCHEDULE_FIELDS = ("passes", "mask_ratio", "schedule", "seed", "metric")
"""The detection settings a line export is made for: a profile whose settings differ in
any of them needs another export."""
COMPARE_CELLS_GRAPH = "compare_cells.onnx"
COMPARE_GRAPH = "compare.onnx"
"""The ``compare`` metric's two graphs: images to the comparator's unit cells, and query
cells against the references' cell bank to per-cell scores (``methods.compare.export``)."""
