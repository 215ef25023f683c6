"""The inspection daemon: camera folders in, results, heatmaps and alerts out.

``intake`` discovers completely written files and queues them as rows, ``worker``
inspects them in batches, ``service`` runs and supervises both under systemd
(``notify``), ``camera_files`` holds the checks a camera file must pass, ``settings`` picks the
config. ``alerts`` plans and delivers notifications.

This file imports nothing: ``config check`` and every command taking ``--config`` import
``daemon.settings``, which loads this package first, and must not pay for torch and the
model that ``service`` needs. Import each name from the module that defines it.
"""
