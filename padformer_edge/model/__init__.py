"""PADFormer as plain torch modules; imports nothing else of the project but ``errors``.

Import from the defining module (``model.config`` for presets and ``ModelConfig``,
``model.padformer`` for the network): this package re-exports nothing, so validating a
training recipe, which needs only the plain dataclasses of ``model.config``, never waits
for torch and timm to load.
"""
