#!/usr/bin/env bash
# The fifth lent GPU's one prepared run (see README, "Training on a lent GPU"). The edge
# tables' 6,000-step model lived outside the repository and was lost with a development
# machine, so this trains `config/train/edge-synth-gpu.yaml` again, unchanged, for its
# float16 weights to be kept in the repository this time. Beside it, on the same card (a
# step of this small model is bound by its own launches and loader, not by the GPU), the
# AAT ablation with the same ten-times recipe: the first Table 3 for edge used the
# three-times recipe, and the AAT is the module README names to test first.
# Made ready and run like gpu_session.sh (DEADLINE; a run stopped early sends its last
# weights, scaled, marked in its log); everything lands in $OUT, the logs in logs.tar.gz.
set -uo pipefail

DEADLINE=${DEADLINE:-480}
source benchmarks/gpu_common.sh
gpu_setup
edge_recipe "$WORK/no_aat-10x.yaml" 10 30 6 use_aat

pids=()  # a bare `wait` would also wait for the tee above, which never ends
train edge-gpu config/train/edge-synth-gpu.yaml synth224-s0 & pids+=($!)
train no_aat-10x "$WORK/no_aat-10x.yaml" synth224-s0 & pids+=($!)
wait "${pids[@]}"

send_weights edge-gpu:synth224-s0 no_aat-10x:synth224-s0
pack_logs
ls -la "$OUT"
