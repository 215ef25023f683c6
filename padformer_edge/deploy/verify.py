"""Checking a profile's exported files before a line loads any of them: the runtime's
package is there, the graphs are in the form the runtime reads, every file still has the
sha256 it was recorded with (a graph changed or replaced after export must not score), and
the graphs were exported for the settings the profile asks for now."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from padformer_edge.deploy.names import SCORING_FILE
from padformer_edge.deploy.sessions import import_onnxruntime, import_openvino, ir_files
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256

if TYPE_CHECKING:
    from padformer_edge.detect.settings import DetectionSettings


def verify_files(folder: Path, files: dict[str, str], fix: str) -> None:
    """Refuse a missing file or one whose bytes differ from the recorded sha256."""
    for name, digest in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            raise UserError(f"exported file {path} is missing; {fix}.")
        if file_sha256(path) != digest:
            raise UserError(
                f"exported file {path} differs from the sha256 its profile records "
                f"({digest[:12]}...); {fix}."
            )


def read_line_export(
    folder: Path,
    files: dict[str, str],
    settings: DetectionSettings,
    graphs: Sequence[str],
    hint: str,
    fix: str,
    metric: str | None = None,
) -> dict[str, Any]:
    """The scoring record of the line export in ``folder``, once every check a line makes
    before loading it holds: the runtime's package (named by ``hint`` when missing, before
    any file is read), the OpenVINO IR of ``graphs`` for that runtime, ``files``' sha256,
    and the settings the graphs were exported for (and ``metric``, when given) against
    ``settings``. Each refusal is one sentence ending in ``fix``."""
    if settings.runtime == "openvino":
        import_openvino(hint)
        missing = [name for name in ir_files(graphs) if name not in files]
        if missing:
            raise UserError(f"the export in {folder} holds no OpenVINO IR ({missing[0]}); {fix}.")
    else:
        import_onnxruntime(hint)
    verify_files(folder, files, fix)
    record = json.loads((folder / SCORING_FILE).read_text())
    wanted = settings.export_settings()
    if record["settings"] != wanted or (metric is not None and record.get("metric") != metric):
        raise UserError(
            f"the graphs in {folder} were exported for detection settings "
            f"{record['settings']} but the profile now asks for {wanted}; {fix}."
        )
    return record
