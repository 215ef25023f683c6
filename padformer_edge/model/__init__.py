"""PADFormer as plain torch modules; imports nothing else of the project but ``errors``."""

from padformer_edge.model.config import PRESETS, ModelConfig
from padformer_edge.model.padformer import PADFormer, ReferenceCache, build_model

__all__ = ["PRESETS", "ModelConfig", "PADFormer", "ReferenceCache", "build_model"]
