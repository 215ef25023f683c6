#!/usr/bin/env bash
# The one prepared run for a lent GPU machine (see docs/training.md, "Training on a lent GPU"). Three trainings
# share the GPU at once: the edge recipe with ten times its steps (the GPU run), the
# same with three times (so that training length is chosen on the validation render, not
# assumed), and the generic model's recipe with ten times its steps. Then the paper and
# edge presets' detection time per image. Everything lands in $OUT: the checkpoints (with
# their fused-metric scales), and logs.tar.gz with one log per run and the timings as JSON.
#
# Made ready here with `python benchmarks/gpu_bundle.py pack ...` (its docstring), then run
# there from the repository root: `bash benchmarks/gpu_session.sh`. A training still
# running at DEADLINE seconds is stopped like Ctrl-C: it writes its resume point, and its
# last weights are scaled and sent back instead, marked as such in its log.
set -uo pipefail

DEADLINE=${DEADLINE:-360}
source benchmarks/gpu_common.sh
gpu_setup
three_times_recipe "$WORK/edge-synth-gpu-3x.yaml"

pids=()  # a bare `wait` would also wait for the tee above, which never ends
train edge-gpu config/train/edge-synth-gpu.yaml synth224-s0 & pids+=($!)
train edge-gpu-3x "$WORK/edge-synth-gpu-3x.yaml" synth224-s0 & pids+=($!)
train generic-gpu config/train/generic-gpu.yaml generic & pids+=($!)
wait "${pids[@]}"
send_weights edge-gpu:synth224-s0 edge-gpu-3x:synth224-s0 generic-gpu:generic

if [[ "$DEVICE" == cuda ]]; then
    python3 benchmarks/gpu_detect_speed.py --json-out "$OUT/gpu_detect_speed.json"
fi
pack_logs
ls -la "$OUT"
