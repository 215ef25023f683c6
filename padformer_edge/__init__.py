"""padformer-edge: pose-agnostic visual inspection for factory lines, built on PADFormer."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("padformer-edge")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
