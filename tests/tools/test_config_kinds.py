"""Schemas live beside their owners and are all known to ``config check`` through
``padformer_edge.tools.config_kinds``, which imports every owner."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli_process import REPO

PROBE = """
import json, sys
from padformer_edge.tools.config_kinds import config_kinds
kinds = {name: f"{cls.__module__}.{cls.__name__}" for name, cls in config_kinds().items()}
print(json.dumps({"kinds": kinds, "torch": "torch" in sys.modules}))
"""


def test_every_kind_is_registered_from_its_owner_without_loading_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, check=True
    )
    found = json.loads(done.stdout)
    assert found["kinds"] == {
        "daemon": "padformer_edge.daemon.settings.DaemonConfig",
        "profile": "padformer_edge.profiles.schema.ProfileConfig",
        "regions": "padformer_edge.profiles.schema.RegionsFile",
        "train": "padformer_edge_training.config.TrainConfig",
        "comparator": "padformer_edge_training.comparator.recipe.ComparatorRecipe",
    }
    assert found["torch"] is False  # checking a YAML file must stay instant on a line PC
