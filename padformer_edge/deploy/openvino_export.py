"""``padformer-edge export --format openvino``: the ONNX export, converted to OpenVINO IR.

The IR is made from the ONNX graphs (``openvino.convert_model``) rather than traced from
torch a second time, so both runtimes run one traced graph and differ only in how they
execute it. The folder keeps the ONNX graphs too: the manifest's weight and config checks
cover both, and the same folder serves ``--runtime onnxruntime`` and ``--runtime openvino``.

The IR keeps its weights in float32 (``compress_to_fp16=False``): ``save_model`` halves
them by default, which would move scores far beyond the parity bound the tests hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from padformer_edge.deploy.export import MANIFEST, export_onnx
from padformer_edge.deploy.graphs import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.deploy.sessions import import_openvino, ir_name
from padformer_edge.files.atomic import atomic_path
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.padformer import PADFormer

MANIFEST_KEY = "openvino"
"""The manifest's section for the IR: the OpenVINO version and each IR file's sha256."""


def convert_to_ir(folder: Path, onnx_names: Iterable[str]) -> dict[str, str]:
    """Each ONNX graph of ``folder`` converted to IR beside it (``.xml`` + ``.bin``, weights
    kept in float32); returns ``{IR file name: sha256}``. The one conversion ``export
    --format openvino`` and ``profile export --runtime openvino`` both run."""
    ov = import_openvino()
    digests = {}
    for graph in onnx_names:
        converted = ov.convert_model(str(folder / graph))
        xml = folder / ir_name(graph)
        # save_model writes the .bin beside the .xml by name; both go in place together
        ov.save_model(converted, str(xml), compress_to_fp16=False)
        for path in (xml, xml.with_suffix(".bin")):
            digests[path.name] = file_sha256(path)
    return digests


def export_openvino(model: PADFormer, out_dir: str | Path) -> dict[str, Any]:
    """The ONNX graphs and ``manifest.json`` (``export_onnx``), then each graph as IR
    (``.xml`` + ``.bin``) with the IR files' sha256 added to the manifest; returns it."""
    ov = import_openvino()
    out = Path(out_dir)
    manifest = export_onnx(model, out)
    digests = convert_to_ir(out, (REFERENCE_GRAPH, TERMS_GRAPH, QUERY_GRAPH))
    manifest[MANIFEST_KEY] = {"version": ov.__version__, "graphs": digests}
    with atomic_path(out / MANIFEST) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
