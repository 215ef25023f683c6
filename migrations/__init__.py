"""Alembic environment and revisions of the result store, shipped inside the package.

Alembic is configured in code (``padformer_edge.store.migrations.alembic_config``), which
points ``script_location`` at this package's folder, so a plain ``pip install .`` can
migrate without an ``alembic.ini`` or a source checkout. The repository's
``migrations/`` folder installs as ``padformer_edge_migrations`` (pyproject's
``package-dir``); like ``padformer_edge_training`` it refuses its folder's name, which
would otherwise import from the repository's root as a second copy.
"""

if __name__ != "padformer_edge_migrations":
    raise ImportError(
        f"'{__name__}' is the repository's migrations/ folder; import "
        "padformer_edge_migrations (pip install -e . in the repository makes it importable) "
        "instead."
    )
