"""Alerts: which to raise with a result, and delivering them from the store's outbox.

The worker calls ``planning.plan_alerts`` (with one ``planning.Cooldown`` it keeps for
its lifetime) and passes the requests to ``store.queue.complete``; the daemon runs one
``dispatcher.AlertDispatcher``. ``config.AlertsConfig`` is the ``alerts:`` section of the
daemon config.

This file imports nothing: the daemon config's schema imports ``alerts.config`` and is
read by every command that takes ``--config``; it must not import the store and its
SQLAlchemy, which delivering alerts needs. Import each name from its defining module.
"""
