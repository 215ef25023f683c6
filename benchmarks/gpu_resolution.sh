#!/usr/bin/env bash
# The fourth lent GPU session's run: does a finer token grid help the edge model? The
# validated PatchCore gains most from a larger input (2@448 against 2@224), while the edge
# preset reads a 192 px image as a 12x12 grid. Both ten-times recipes
# (config/train/edge-synth-gpu.yaml, config/train/generic-gpu.yaml) are trained unchanged
# but for the model's input, 256 px (a 16x16 grid of 16 px patches, the same 2x2 fold of
# stride-8 cells), side by side under one deadline; a run still going then is stopped, and
# its last weights are scaled and sent. Weights and logs land in $OUT.
#
# Run there from the repository root with .gpu/bundle carried along (README, "Training
# on a lent GPU"): OUT=/path DEADLINE=420 bash benchmarks/gpu_resolution.sh
set -uo pipefail

DEADLINE=${DEADLINE:-420}
SIZE=${SIZE:-256}
source benchmarks/gpu_common.sh
gpu_setup

# a recipe ($2) with one model override, its input size, written to $1
sized_recipe() {
    python3 - "$1" "$2" "$SIZE" <<'PY' || exit 1
import sys, yaml
recipe = yaml.safe_load(open(sys.argv[2]))
recipe["model"]["overrides"] = {"img_size": int(sys.argv[3])}
yaml.safe_dump(recipe, open(sys.argv[1], "w"), sort_keys=False)
PY
}

pids=()  # a bare `wait` would also wait for the tee above, which never ends
sized_recipe "$WORK/edge$SIZE.yaml" config/train/edge-synth-gpu.yaml
sized_recipe "$WORK/generic$SIZE.yaml" config/train/generic-gpu.yaml
train "edge$SIZE" "$WORK/edge$SIZE.yaml" synth224-s0 & pids+=($!)
train "generic$SIZE" "$WORK/generic$SIZE.yaml" generic & pids+=($!)
wait "${pids[@]}"
send_weights "edge$SIZE:synth224-s0" "generic$SIZE:generic"
pack_logs
ls -la "$OUT"
