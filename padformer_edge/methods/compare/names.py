"""The file names of compare's line export, in a module without torch, so the line
detector and the torch exporter name the same files from one place."""

COMPARE_CELLS_GRAPH = "compare_cells.onnx"
COMPARE_GRAPH = "compare.onnx"
"""The ``compare`` metric's two graphs: images to the comparator's unit cells, and query
cells against the references' cell bank to per-cell scores (``methods.compare.export``)."""
