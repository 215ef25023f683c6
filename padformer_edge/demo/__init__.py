"""The README's first set-up command as one command: data, model, profile, daemon, alerts.

``plan`` holds the demo's sizes, ``run`` carries it out. This file imports nothing:
``demo`` without a shipped model must say so at once, before torch and the training code
are imported. Import each name from the module that defines it.
"""
