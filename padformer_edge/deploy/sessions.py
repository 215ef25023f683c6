"""One exported graph opened in onnxruntime or OpenVINO behind one call, ``run(feeds)``.

The torch ``Detector``'s runners (``onnx_runner``, ``openvino_runner``) and the torch-free
``LineDetector`` open their graphs here, so each runtime's settings live in one place:
onnxruntime's pool threads sleep instead of spinning (a line PC shares its cores with
decoding and the page, and spinning would also inflate measured CPU time), and OpenVINO
computes in float32 (on CPUs with bfloat16 units its default precision hint is bf16,
which moves scores far beyond float32 rounding with no sign of it in the output). Imports
no torch: the line runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from padformer_edge.devices.runtimes import INSTALL_COMMANDS
from padformer_edge.errors import UserError

LINE_ONNXRUNTIME_HINT = INSTALL_COMMANDS["onnxruntime"]
CUDA_PROVIDER = "CUDAExecutionProvider"
CUDA_HINT = (
    "install onnxruntime-gpu in place of onnxruntime (pip uninstall onnxruntime, then "
    "pip install 'onnxruntime-gpu>=1.17,<2')"
)
LINE_OPENVINO_HINT = INSTALL_COMMANDS["openvino"]
OPENVINO_HINT = "pip install 'padformer-edge[openvino]'"


class Graph(Protocol):
    """An opened graph: named input arrays in, every output in order out; ``device`` is
    where it runs (``cpu`` or ``cuda``), which decides where the line's inputs are made."""

    device: str

    def run(self, feeds: dict[str, Any]) -> list[np.ndarray]: ...


def import_onnxruntime(hint: str = LINE_ONNXRUNTIME_HINT) -> Any:
    """onnxruntime, or the one sentence that says how to install it (``hint``)."""
    try:
        import onnxruntime
    except ImportError:
        raise UserError(
            "the onnxruntime runtime needs the onnxruntime package, which is not installed; "
            f"{hint}."
        ) from None
    return onnxruntime


def import_openvino(hint: str = OPENVINO_HINT) -> Any:
    """openvino, or the one sentence that says how to install it (``hint``)."""
    try:
        import openvino
    except ImportError:
        raise UserError(
            f"the openvino runtime needs the openvino package, which is not installed; {hint}."
        ) from None
    return openvino


def ir_name(onnx_name: str) -> str:
    """``query.onnx`` -> ``query.xml`` (its weights go to ``query.bin`` beside it)."""
    return str(Path(onnx_name).with_suffix(".xml"))


def ir_files(onnx_names: Iterable[str]) -> list[str]:
    """Every IR file (``.xml`` and ``.bin``) the graphs ``onnx_names`` convert to."""
    found = []
    for name in onnx_names:
        xml = ir_name(name)
        found += [xml, str(Path(xml).with_suffix(".bin"))]
    return found


def onnxruntime_providers(ort: Any, device: str) -> list[str]:
    """The execution providers a session on ``device`` asks for: ``cpu`` the CPU;
    ``cuda`` the CUDA provider first and the CPU for any operator it lacks, refused in
    one sentence when this onnxruntime build has none; ``auto`` CUDA where the build has
    it, else the CPU, so a plain line install keeps running on the CPU."""
    has_cuda = CUDA_PROVIDER in ort.get_available_providers()
    if device == "cuda" and not has_cuda:
        raise UserError(
            "device 'cuda' was asked of the onnxruntime runtime, but this onnxruntime has "
            f"no CUDA provider; {CUDA_HINT}, or use device cpu."
        )
    if device in ("cuda", "auto") and has_cuda:
        return [CUDA_PROVIDER, "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


class OnnxGraph:
    """One ONNX graph in an onnxruntime session with ``threads`` intra-op threads (one
    inter-op thread: a line runs one detection at a time), on ``device`` (see
    ``onnxruntime_providers``)."""

    def __init__(self, ort: Any, path: Path, threads: int, device: str = "cpu") -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No onnxruntime arena: it never hands memory back and takes a new block for each
        # input shape it meets, so on the demo profile the daemon grew by hundreds of MB
        # at batches of a size not seen before (benchmarks/soak.py), even after warming
        # up on a full batch; without it resident memory stays flat over batch sizes, at
        # no CPU cost measured. Tensors then come from malloc, which keeps freed memory
        # for the next call (padformer_edge.devices.allocator) and returns it when the daemon trims.
        options.enable_cpu_mem_arena = False
        providers = onnxruntime_providers(ort, device)
        self.session = ort.InferenceSession(str(path), options, providers=providers)
        # onnxruntime falls back to the CPU when the CUDA provider cannot start (no GPU, no
        # driver, a CUDA library missing); a line that asked for the GPU must hear of it
        if device == "cuda" and CUDA_PROVIDER not in self.session.get_providers():
            raise UserError(
                f"device 'cuda' was asked of the onnxruntime runtime, but its CUDA provider "
                f"did not start for {path.name} (no visible GPU, or CUDA libraries missing); "
                "check the GPU driver and CUDA install, or use device cpu."
            )
        self.device = "cuda" if CUDA_PROVIDER in self.session.get_providers() else "cpu"

    def run(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        return self.session.run(None, feeds)


def openvino_config(threads: int) -> dict[str, Any]:
    """OpenVINO's CPU settings: float32 (see the module's docstring), ``threads``
    inference threads, one stream and no core pinning, for one detection at a time on
    cores shared with decoding and the page."""
    return {
        "INFERENCE_NUM_THREADS": max(1, threads),
        "NUM_STREAMS": 1,
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY",
        "ENABLE_CPU_PINNING": False,
    }


class IrGraph:
    """One OpenVINO IR graph (``.xml`` + ``.bin``) compiled for the CPU in float32.

    Compiled for the dynamic shapes it was exported with, so any batch and any number of
    references run, at its first call: a caller that calls ``fix_shapes`` first (the line
    does for its query graph) would otherwise compile it once for nothing, about half a
    CPU second for the edge preset's query graph. The file is read at opening, so a
    missing or broken graph is still named when the profile loads.
    """

    def __init__(self, ov: Any, path: Path, threads: int) -> None:
        self.ov, self.path, self.core = ov, path, ov.Core()
        self.device = "cpu"  # open_graphs refuses cuda for OpenVINO
        self.config = openvino_config(threads)
        self.core.read_model(str(path))  # parsed, then dropped: see ``compile``
        self.request: Any | None = None  # the dynamic compile, made by ``request_for``
        self.fixed: tuple[dict[str, tuple[int, ...]], Any] | None = None

    def compile(self, shapes: dict[str, tuple[int, ...]] | None) -> Any:
        """An infer request of the graph read afresh from its file, its inputs reshaped
        to ``shapes`` when given (the graph is not kept: its weights live in the
        compiled model, and a second copy would only add to the daemon's memory)."""
        model = self.core.read_model(str(self.path))
        if shapes is not None:
            model.reshape({name: self.ov.PartialShape(list(s)) for name, s in shapes.items()})
        return self.core.compile_model(model, "CPU", self.config).create_infer_request()

    def fix_shapes(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Run feeds of exactly these input shapes (by input name, every input) on a
        copy compiled for them alone. OpenVINO picks its kernels and plans its buffers
        once for static shapes instead of at every call: on the edge preset's query graph
        with 12 references this took about an eighth off a call, with outputs equal to
        float32 rounding (``benchmarks/detect_speed.py --runtimes``, line rows). A
        dynamic compile already made is dropped here and made again only when a call
        brings other shapes, so at most two compiled copies are ever held."""
        fixed = {name: tuple(shape) for name, shape in shapes.items()}
        self.fixed = (fixed, self.compile(fixed))
        self.request = None

    def request_for(self, feeds: dict[str, Any]) -> Any:
        """The fixed-shape request when every feed has its shape, else the dynamic one."""
        if self.fixed is not None:
            shapes, request = self.fixed
            if all(tuple(feeds[name].shape) == shape for name, shape in shapes.items()):
                return request
        if self.request is None:
            self.request = self.compile(None)
        return self.request

    def run(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        """Every output, copied out of the request's reused buffers. Inputs are read in
        place (``share_inputs``): callers pass contiguous float32/int64 arrays (or
        OpenVINO tensors over them) and do not change them while it runs."""
        request = self.request_for(feeds)
        request.infer(feeds, share_inputs=True)
        return [np.array(tensor.data) for tensor in request.output_tensors]


def refuse_cuda_for_openvino(device: str) -> None:
    """OpenVINO runs the graphs on the CPU here (its GPU plugin is for Intel GPUs)."""
    if device == "cuda":
        raise UserError(
            "device 'cuda' was asked of the openvino runtime, which runs on the CPU here; "
            "use runtime onnxruntime with onnxruntime-gpu for a CUDA GPU, or device cpu."
        )


def open_graphs(
    runtime: str,
    folder: Path,
    onnx_names: Iterable[str],
    threads: int,
    hint: str,
    device: str = "cpu",
) -> dict[str, Graph]:
    """The graphs ``onnx_names`` of ``folder`` opened with ``runtime``, by ONNX name (the
    OpenVINO runtime opens each one's IR beside it); ``hint`` is the install command a
    missing runtime package names. ``device`` (``cpu``, ``cuda``, ``auto``): onnxruntime
    can run on a CUDA GPU; OpenVINO runs on the CPU, and refuses ``cuda``."""
    if runtime == "openvino":
        refuse_cuda_for_openvino(device)
        ov = import_openvino(hint)
        return {name: IrGraph(ov, folder / ir_name(name), threads) for name in onnx_names}
    if runtime != "onnxruntime":
        raise ValueError(f"runtime {runtime!r} runs no exported graphs")
    ort = import_onnxruntime(hint)
    onnxruntime_providers(ort, device)  # a build without CUDA is named before any file is read
    return {name: OnnxGraph(ort, folder / name, threads, device) for name in onnx_names}
