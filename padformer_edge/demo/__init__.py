"""The README's main job as one command: data, training, profile, daemon, results, alerts."""

from padformer_edge.demo.plan import FULL, QUICK, DemoPlan
from padformer_edge.demo.run import DemoReport, TrainingFacts, run_demo

__all__ = ["FULL", "QUICK", "DemoPlan", "DemoReport", "TrainingFacts", "run_demo"]
