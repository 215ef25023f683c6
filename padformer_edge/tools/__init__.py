"""The checks and tools that look across the line: ``doctor`` and its device and
configuration checks (``device_check``, ``config_kinds``, ``findings``), and copies of the
state folder (``state_copy``)."""
