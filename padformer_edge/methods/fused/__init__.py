"""The ``fused`` score: PADFormer's colour and feature errors mixed with the distance to
the references, in torch (``metric``) and numpy (``line``)."""
