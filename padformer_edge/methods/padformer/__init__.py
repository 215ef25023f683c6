"""PADFormer's reconstruction scores (``lab``, ``rgb``, ``feature``) and the machinery every
metric read from PADFormer runs on: the multi-pass torch ``Detector``, its pass folding,
the line's exported graphs and their numpy scoring."""
