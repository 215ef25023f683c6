"""The schema revisions, one module each in order (``NNNN_what.py``), which Alembic applies
and ``store.migrations`` reads the chain and head of."""
