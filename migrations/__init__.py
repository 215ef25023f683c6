"""Alembic environment and revisions of the result store, shipped inside the package.

Alembic is configured in code (``padformer_edge.store.schema.alembic_config``), which
points ``script_location`` at this package, so a plain ``pip install .`` can migrate
without an ``alembic.ini`` or a source checkout.
"""
