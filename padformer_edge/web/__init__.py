"""The operator's page and ``/metrics``: a read-only web application over the store.

``config`` is the ``http:`` section, ``app`` routes and checks requests, ``pages`` has
one handler per route, ``queries`` the reads (and the one retry write), ``media`` the
rules for serving pictures, ``metrics`` the Prometheus collector, ``server`` the socket.
Nothing here imports the model, the detector or the daemon: the page can run beside a
daemon (``serve``) or inside it (``watch`` with an ``http:`` section).

Names resolve lazily: the daemon config imports ``config`` alone and must not pay for
Jinja2, OpenCV and prometheus-client when no page is served.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "HttpConfig": "padformer_edge.web.config",
    "WebApp": "padformer_edge.web.app",
    "WebServer": "padformer_edge.web.server",
    "make_server": "padformer_edge.web.server",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
