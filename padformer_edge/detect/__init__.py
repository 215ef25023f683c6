"""Multi-pass detection: masks, LAB scoring, heatmaps and the cached-reference Detector.

This file imports nothing, so that ``detect.settings`` (the detector's settings, without
torch) can be imported by the CLI and the config schemas at no cost. Import each name
from the module that defines it (``detect.images.read_image``, ``detect.readout.Readout``).
"""
