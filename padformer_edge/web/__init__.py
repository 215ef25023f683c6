"""The operator's page and ``/metrics``: a Starlette application over the store.

``config`` is the ``http:`` section, ``webapp`` the shared ``WebApp`` (engines,
settings), ``asgi`` builds the Starlette app (routes, error pages) around it,
``middleware`` the Host/token checks and security headers, ``auth``, ``sessions`` and
``throttle`` who may log in and how often, ``login`` the login and logout routes,
``pages`` one handler per page, ``events`` the live stream, ``daemon_state`` the
heartbeat banner, ``queries`` the reads (and the one retry write), ``media`` the rules
for serving pictures, ``metrics`` the Prometheus collector, ``server`` uvicorn on the
socket and ``protocol`` its HTTP protocol with a deadline for the first request.
Nothing here imports the model, the detector or the daemon: the page can run beside a
daemon (``serve``) or inside it (``watch`` with an ``http:`` section).

This file imports nothing: the daemon config imports ``web.config`` alone and must not
pay for Starlette, uvicorn, Jinja2, OpenCV and prometheus-client when no page is served.
Import each name from the module that defines it.
"""
