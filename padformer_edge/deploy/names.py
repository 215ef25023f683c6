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
