"""What a profile on the ``compare`` metric stores so that a line PC scores with no torch.

Two graphs and ``scoring.json``: the comparator's frozen CNN as images to unit cells
(``compare_cells.onnx``, normalisation inside), and the comparator as query cells and the
references' cell bank to per-cell scores (``compare.onnx``). The bank itself (every
reference cell, upright and turned) is made on the line from the first graph, so new
references need no export. Needs torch: it runs where profiles are made.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from padformer_edge.deploy.export import OPSET
from padformer_edge.deploy.names import SCORING_FILE
from padformer_edge.detect.array_ops import QUARTER_TURNS
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge.methods.compare.names import COMPARE_CELLS_GRAPH, COMPARE_GRAPH
from padformer_edge.methods.compare.scorer import CompareMetric, compare_signature

COMPARE_SCORING_TAG = "padformer-edge-line-compare/1"


class CellsGraph(nn.Module):
    """Square images in [0, 1] ``[B, 3, S, S]`` -> unit cells ``[B, C, S/8, S/8]``."""

    def __init__(self, model: ComparisonModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, squares01: torch.Tensor) -> torch.Tensor:
        model = self.model
        maps = model.maps(squares01).float()
        # ``backbone.unit_cells`` with the channel count as a constant: the exporter cannot
        # take layer_norm's shape from a traced size
        channels = model.config.channels
        standard = F.layer_norm(maps.permute(0, 2, 3, 1), (channels,))
        return F.normalize(standard, dim=-1).permute(0, 3, 1, 2)


class CompareGraph(nn.Module):
    """Query cells ``[B, C, h, w]`` and the references' bank ``[1, R, C]`` -> per-cell
    scores ``[B, h, w]`` (distance plus the learned correction)."""

    def __init__(self, model: ComparisonModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, cells: torch.Tensor, bank: torch.Tensor) -> torch.Tensor:
        unused = cells.unsqueeze(1)  # the upright references feed only STN-aligned keys
        return self.model(cells, unused, bank).score


def compare_record(metric: CompareMetric, settings: DetectionSettings) -> dict[str, Any]:
    """What ``methods.compare.line.LineCompareDetector`` needs besides the graphs."""
    return {
        "format": COMPARE_SCORING_TAG,
        "metric": "compare",
        "signature": compare_signature(metric),
        "settings": settings.export_settings(),
        "input_size": metric.input_size,
        "turns": list(QUARTER_TURNS),
        "sigma": float(metric.map_readout.sigma),
    }


def export_compare(metric: CompareMetric, settings: DetectionSettings, out: Path) -> list[str]:
    """Write the two graphs and ``scoring.json`` into ``out``; returns the file names."""
    model = metric.comparison.cpu().eval()
    if model.config.aligned_k:
        raise UserError(
            "this comparator reads STN-aligned references, which have no line graph yet; "
            "run its profile with runtime torch."
        )
    size, channels = model.config.input_size, model.config.channels
    generator = torch.Generator().manual_seed(0)
    squares = torch.rand(2, 3, size, size, generator=generator)
    _export(CellsGraph(model), (squares,), out / COMPARE_CELLS_GRAPH, ["squares"], ["cells"])
    cells = model.cells(squares)
    bank = torch.nn.functional.normalize(torch.randn(1, 4 * cells[0, 0].numel(), channels), dim=-1)
    _export(CompareGraph(model), (cells, bank), out / COMPARE_GRAPH, ["cells", "bank"], ["score"])
    with atomic_path(out / SCORING_FILE) as tmp:
        Path(tmp).write_text(json.dumps(compare_record(metric, settings), indent=2) + "\n")
    return [COMPARE_CELLS_GRAPH, COMPARE_GRAPH, SCORING_FILE]


def export_comparator(settings: DetectionSettings, out: Path) -> dict[str, str]:
    """A line's files for the comparator ``settings`` name: its two graphs and
    ``scoring.json`` (``export_compare``), with IR beside them for openvino;
    ``{file: sha256}``."""
    from padformer_edge.files.digest import file_sha256
    from padformer_edge.methods.compare.scorer import load_compare_metric

    metric = load_compare_metric(torch.device("cpu"), None, settings.section.comparator)
    written = export_compare(metric, settings, out)
    digests = {name: file_sha256(out / name) for name in written}
    if settings.runtime == "openvino":
        from padformer_edge.deploy.openvino_export import convert_to_ir

        digests.update(convert_to_ir(out, [name for name in written if name.endswith(".onnx")]))
    return dict(sorted(digests.items()))


def _export(
    module: nn.Module, example: tuple, path: Path, inputs: list[str], outputs: list[str]
) -> None:
    """One graph with the TorchScript exporter, its batch (and the bank's rows) dynamic."""
    axes = {name: {0: "batch"} for name in [inputs[0], *outputs]}
    if "bank" in inputs:
        axes["bank"] = {1: "rows"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with atomic_path(path) as tmp:
            torch.onnx.export(
                module,
                example,
                str(tmp),
                input_names=inputs,
                output_names=outputs,
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
