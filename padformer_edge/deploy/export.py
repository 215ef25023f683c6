"""``padformer-edge export``: a torch model as ONNX graphs plus a manifest.

Three graphs, split where the ``Detector`` splits its work: ``references.onnx`` (reference
images -> encoder features, once per profile; for a model whose ``feature_readout`` is
``references`` also the references' CNN features, which ``query.onnx`` then takes as
``ref_targets``), ``reference_terms.onnx`` (features -> the decoder's cached terms,
cheap, so a stored feature file is enough) and ``query.onnx`` (every masked pass). The
passes batch and the number of references are dynamic axes, so one export serves any
``max_batch`` and any reference set.

``manifest.json`` names the weights the graphs came from (``tensors_sha256`` of the state
dict) and each graph's sha256: a runner refuses graphs made from other weights, because
an export that silently scores with another model is the failure users of exported
anomaly detectors meet most.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import torch

from padformer_edge.deploy.graphs import (
    QUERY_GRAPH,
    REFERENCE_GRAPH,
    TERMS_GRAPH,
    QueryGraph,
    ReferenceGraph,
    TermsGraph,
    reference_outputs,
    term_names,
)
from padformer_edge.deploy.names import MANIFEST
from padformer_edge.detect.masks import mask_indices
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.header import tensors_sha256
from padformer_edge.model.padformer import PADFormer

FORMAT_TAG = "padformer-edge-onnx/1"
OPSET = 20
"""A static opset every onnxruntime >= 1.17 runs; scaled_dot_product_attention with a
boolean mask (``isolate_masked``) exports from opset 14 on."""
EXAMPLE_REFERENCES = 2  # traced with 2 so the reference axis cannot be folded to 1
EXAMPLE_PASSES = 2


def weights_sha256(model: PADFormer) -> str:
    """The digest a manifest records and a runner checks: the model's whole state dict."""
    return tensors_sha256(model.state_dict())


def config_record(model: PADFormer) -> dict[str, Any]:
    """The model's config as the manifest stores it (JSON types), so a runner can compare:
    switches such as ``isolate_masked`` change the graph but not the weights."""
    return json.loads(json.dumps(dataclasses.asdict(model.config)))


def export_onnx(model: PADFormer, out_dir: str | Path, opset: int = OPSET) -> dict[str, Any]:
    """Write the three graphs and ``manifest.json`` into ``out_dir``; returns the manifest."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the exported graphs.")
    out.mkdir(parents=True, exist_ok=True)
    model = model.cpu().eval()
    cfg = model.config
    size = cfg.img_size
    gen = torch.Generator().manual_seed(0)
    refs = torch.randn(EXAMPLE_REFERENCES, 3, size, size, generator=gen)
    query = torch.randn(EXAMPLE_PASSES, 3, size, size, generator=gen)
    ids_keep, ids_restore = mask_indices(model.random_mask(EXAMPLE_PASSES, gen))
    names, produced = term_names(model), reference_outputs(model)
    with torch.no_grad():
        encoded = ReferenceGraph(model)(refs)
        features, *targets = encoded if isinstance(encoded, tuple) else (encoded,)
        cache = TermsGraph(model)(features)
    reference_axes = {"references": {0: "references"}, **{n: {1: "references"} for n in produced}}
    _export(ReferenceGraph(model), (refs,), out / REFERENCE_GRAPH, opset, reference_axes)
    term_outputs = ["ref_tokens", *names]
    term_axes = {name: {1: "references"} for name in ["features", *term_outputs]}
    query_references = term_outputs + produced[1:]  # ref_targets last, for a pointer model
    _export(TermsGraph(model), (features,), out / TERMS_GRAPH, opset, term_axes)
    outputs = ["pixels", "predicted_features"] if cfg.cnn_tokens else ["pixels"]
    query_axes = {
        "query": {0: "rows"},
        "ids_keep": {0: "rows", 1: "visible"},
        "ids_restore": {0: "rows"},
        **{name: {1: "references"} for name in query_references},
        **{name: {0: "rows"} for name in outputs},
    }
    ids = (torch.from_numpy(ids_keep), torch.from_numpy(ids_restore))
    query_inputs = (query, *ids, *cache, *targets)
    _export(QueryGraph(model), query_inputs, out / QUERY_GRAPH, opset, query_axes)
    manifest = {
        "format": FORMAT_TAG,
        "opset": opset,
        "torch": torch.__version__,
        "preset": model.preset_name,
        "config": config_record(model),
        "weights_sha256": weights_sha256(model),
        "term_names": names,
        "reference_outputs": produced,
        "outputs": outputs,
        "graphs": {
            name: file_sha256(out / name) for name in (REFERENCE_GRAPH, TERMS_GRAPH, QUERY_GRAPH)
        },
    }
    with atomic_path(out / MANIFEST) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _export(
    module: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    path: Path,
    opset: int,
    axes: dict[str, dict[int, str]],
) -> None:
    """One graph with the TorchScript exporter (``dynamo=False``: the dynamo exporter
    needs onnxscript, which the ``onnx`` extra does not install). ``axes`` names every
    input, then every output, in order, with its dynamic axes."""
    names = list(axes)
    with warnings.catch_warnings():
        # the tracer warns about every Python int it records; each is a fixed model size
        warnings.simplefilter("ignore")
        with atomic_path(path) as tmp:
            torch.onnx.export(
                module,
                inputs,
                str(tmp),
                input_names=names[: len(inputs)],
                output_names=names[len(inputs) :],
                dynamic_axes=axes,
                opset_version=opset,
                dynamo=False,
            )
