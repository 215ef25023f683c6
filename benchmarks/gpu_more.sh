#!/usr/bin/env bash
# The second lent GPU's one prepared run (see README, "GPU rows"). gpu_session.sh showed
# that a training's steps per second stayed the same while three shared the card: a step
# of this small model is bound by its own kernel launches and data loader, not by the GPU.
# So five trainings run at once here, each a process of its own:
#   edge-more     the first session's 6000-step edge weights plus 4500 cross-view steps
#                 (config/train/edge-more-gpu.yaml, --init the bundle's fp16 copy);
#   generic-more  the shipped generic model plus 4500 cross-view steps
#                 (config/train/generic-more-gpu.yaml, --init generic);
#   no_stn, no_selection, no_aat
#                 Table 3's ablations with the three-times edge recipe, to compare with
#                 the first session's edge-gpu-3x (same recipe, seed and data).
# Made ready and run like gpu_session.sh (DEADLINE, stopped runs' last weights scaled and
# sent back, marked as such in their logs); everything lands in $OUT, the logs packed in
# logs.tar.gz.
set -uo pipefail

DEADLINE=${DEADLINE:-450}
source benchmarks/gpu_common.sh
gpu_setup
three_times_recipe "$WORK/no_stn.yaml" use_stn
three_times_recipe "$WORK/no_selection.yaml" use_selection
three_times_recipe "$WORK/no_aat.yaml" use_aat

pids=()  # a bare `wait` would also wait for the tee above, which never ends
train edge-more config/train/edge-more-gpu.yaml synth224-s0 \
    --init "$BUNDLE/edge-gpu-6000.safetensors" & pids+=($!)
train generic-more config/train/generic-more-gpu.yaml generic --init generic & pids+=($!)
for name in no_stn no_selection no_aat; do
    train "$name" "$WORK/$name.yaml" synth224-s0 & pids+=($!)
done
wait "${pids[@]}"

send_weights edge-more:synth224-s0 generic-more:generic no_stn:synth224-s0 \
    no_selection:synth224-s0 no_aat:synth224-s0
pack_logs
ls -la "$OUT"
