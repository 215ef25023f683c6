#!/usr/bin/env bash
# What the fourth GPU session ran after benchmarks/gpu_resolution.sh, with the device time
# left: the 256 px edge run had been stopped by the deadline at step 4,439 of 6,000, its
# rate still at about a quarter of the peak. Its weights (in the bundle as
# edge256-4439.safetensors) get the 1,500 cross-view steps it missed (10 epochs of the
# edge-more recipe) at the rate it stopped at, so it ends annealed after about as many
# steps as the 192 px run it is compared with.
#
# The bundle went with those weights copied in and the 6,000-step fp16 copy that
# gpu_more.sh starts from taken out, to stay under one call's 64 MiB upload.
# Run there from the repository root with .gpu/bundle carried along:
#   OUT=/path DEADLINE=200 bash benchmarks/gpu_resolution_more.sh
set -uo pipefail

DEADLINE=${DEADLINE:-200}
source benchmarks/gpu_common.sh
gpu_setup

python3 - "$WORK/edge256-more.yaml" <<'PY' || exit 1
import sys, yaml
recipe = yaml.safe_load(open("config/train/edge-more-gpu.yaml"))
recipe["stages"]["cross_view"]["epochs"] = 10
recipe["optim"]["lr"] = 1.1e-4
yaml.safe_dump(recipe, open(sys.argv[1], "w"), sort_keys=False)
PY
train edge256-more "$WORK/edge256-more.yaml" synth224-s0 --init "$BUNDLE/edge256-4439.safetensors"
send_weights edge256-more:synth224-s0
pack_logs
ls -la "$OUT"
