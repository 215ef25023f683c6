"""Deployment: PADFormer exported as ONNX graphs, and the runtimes that run any method's
graphs.

``export`` writes the graphs (and a manifest naming the model they came from) from a
torch model, ``openvino_export`` converts them to OpenVINO IR; ``onnx_runner`` and
``openvino_runner`` run them for the torch ``Detector``'s reconstruction step
(``graph_runner`` says what it asks of them). For a line with no torch, ``sessions``
opens a graph in either runtime, ``verify`` checks a profile's files against their
sha256, and ``line_readout`` and ``arrays`` are the numpy readout and image arithmetic
every method's line scorer shares; each method's own line export and scorer live in its
package under ``methods``. The modules a line runs (``names``, ``sessions``, ``verify``,
``arrays``, ``line_readout``) import no torch.
"""
