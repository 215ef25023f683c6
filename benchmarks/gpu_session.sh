#!/usr/bin/env bash
# The one prepared run for a lent GPU machine (see README, "GPU rows"). Three trainings
# share the GPU at once: the edge recipe with ten times its steps (the issue's GPU run), the
# same with three times (so that training length is chosen on the validation render, not
# assumed), and the generic model's recipe with ten times its steps. Then the paper and
# edge presets' detection time per image. Everything lands in $OUT: the checkpoints (with
# their fused-metric scales), one log per run and the timings as JSON.
#
# Made ready here with `python benchmarks/gpu_bundle.py pack ...` (its docstring), then run
# there from the repository root: `bash benchmarks/gpu_session.sh`. A training still
# running at DEADLINE seconds is stopped like Ctrl-C: it writes its resume point, and its
# last weights are scaled and sent back instead, marked as such in its log. (--foreground:
# only the trainer gets the signal, so it can still stop its loader workers itself.)
set -uo pipefail

OUT=${OUT:?OUT names the folder whose files come back}
BUNDLE=${BUNDLE:-.gpu/bundle}
WORK=${WORK:-/tmp/gpu}
DEVICE=${DEVICE:-cuda}
DEADLINE=${DEADLINE:-360}
exec > >(tee "$OUT/session.log") 2>&1

python3 benchmarks/gpu_bundle.py unpack --bundle "$BUNDLE" --to "$WORK" || exit 1
export PYTHONPATH="${SITE:-$WORK/site}:$PWD" PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) \
if torch.cuda.is_available() else 'no GPU')"

# The three-times variant differs from the ten-times recipe in its epochs alone.
python3 - "$WORK/edge-synth-gpu-3x.yaml" <<'EOF' || exit 1
import sys, yaml
recipe = yaml.safe_load(open("config/train/edge-synth-gpu.yaml"))
recipe["stages"]["within_view"]["epochs"] = 3
recipe["stages"]["cross_view"]["epochs"] = 9
recipe["data"]["num_workers"] = 3
yaml.safe_dump(recipe, open(sys.argv[1], "w"), sort_keys=False)
EOF

train() {  # name, recipe, dataset
    local start=$SECONDS
    timeout --foreground -k 90 -s TERM "$DEADLINE" python3 -m padformer_edge train --config "$2" \
        --data "$WORK/data/$3" --out "$WORK/runs/$1" --device "$DEVICE" >"$OUT/$1.log" 2>&1
    echo "$1: exit $? after $((SECONDS - start)) s" | tee -a "$OUT/$1.log"
}
pids=()  # a bare `wait` would also wait for the tee above, which never ends
train edge-gpu config/train/edge-synth-gpu.yaml synth224-s0 & pids+=($!)
train edge-gpu-3x "$WORK/edge-synth-gpu-3x.yaml" synth224-s0 & pids+=($!)
train generic-gpu config/train/generic-gpu.yaml generic & pids+=($!)
wait "${pids[@]}"

for run in edge-gpu:synth224-s0 edge-gpu-3x:synth224-s0 generic-gpu:generic; do
    name=${run%%:*} data=${run##*:} folder="$WORK/runs/${run%%:*}"
    if [[ -f "$folder/model.safetensors" ]]; then
        cp "$folder/model.safetensors" "$OUT/$name.safetensors"
    elif [[ -f "$folder/last.safetensors" ]]; then
        # Scale a copy: last.safetensors must stay as the resume point recorded it, or
        # `train --resume` refuses to continue the run.
        echo "$name: stopped early; sending its last weights, scaled here" | tee -a "$OUT/$name.log"
        cp "$folder/last.safetensors" "$OUT/$name.safetensors"
        python3 -m training.score_scales "$OUT/$name.safetensors" "$WORK/data/$data"
    else
        echo "$name: no weights written" | tee -a "$OUT/$name.log"
    fi
done

if [[ "$DEVICE" == cuda ]]; then
    python3 benchmarks/gpu_detect_speed.py --json-out "$OUT/gpu_detect_speed.json"
fi
ls -la "$OUT"
