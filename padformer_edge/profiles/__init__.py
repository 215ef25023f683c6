"""Inspection profiles: one product's model, references, detection settings and threshold.

The daemon loads a profile by name and runs it exactly as ``profile test`` does::

    from padformer_edge.profiles.layout import profiles_root
    from padformer_edge.profiles.profile import load_profile

    profile = load_profile(profiles_root(), "bracket")
    detector = profile.build_detector()          # verifies the checkpoint's sha256
    score = detector.detect([image])[0].score
    profile.is_anomaly(score), profile.normalised_score(score)

This file imports nothing: ``profile list`` and ``config check`` load ``profile`` and
``schema``, and must not pay for torch and the model, which ``create``, ``calibrate``
and ``verdicts`` import. Import each name from the module that defines it.
"""
