"""The inspection daemon: camera folders in, results, heatmaps and alerts out.

``intake`` discovers completely written files and queues them as rows, ``worker``
inspects them in batches, ``service`` runs and supervises both under systemd
(``notify``), ``files`` holds the checks a camera file must pass, ``settings`` picks the
config. ``alerts`` plans and delivers notifications.

Names are resolved lazily: commands that only need ``daemon.alerts`` or the config
schema (``alerts list``, ``config check``) should not pay for importing torch and the
model, which the service needs.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "Daemon": "padformer_edge.daemon.service",
    "run_daemon": "padformer_edge.daemon.service",
    "Notifier": "padformer_edge.daemon.notify",
    "BUNDLED_CONFIG": "padformer_edge.daemon.settings",
    "load_daemon_config": "padformer_edge.daemon.settings",
    "heatmap_path": "padformer_edge.daemon.worker",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
