"""The inspection daemon: camera folders in, results, heatmaps and alerts out.

``intake`` discovers completely written files and queues them as rows, ``worker``
inspects them in batches, ``service`` runs and supervises both under systemd
(``notify``), ``files`` holds the checks a camera file must pass, ``settings`` picks the
config. ``alerts`` (its own package) plans and delivers notifications.
"""

from padformer_edge.daemon.notify import Notifier
from padformer_edge.daemon.service import Daemon, run_daemon
from padformer_edge.daemon.settings import BUNDLED_CONFIG, load_daemon_config
from padformer_edge.daemon.worker import AlertPlanner, heatmap_path

__all__ = [
    "BUNDLED_CONFIG",
    "AlertPlanner",
    "Daemon",
    "Notifier",
    "heatmap_path",
    "load_daemon_config",
    "run_daemon",
]
