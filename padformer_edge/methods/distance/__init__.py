"""The ``distance`` score: how far each cell of a query lies from the nearest reference
cell in PADFormer's CNN features, with no reconstruction pass; the search in torch
(``search``) and numpy (``line``)."""
