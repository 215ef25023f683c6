#!/usr/bin/env bash
# What the second GPU session ran after benchmarks/gpu_more.sh, on the same warm machine
# (its /tmp/gpu still in place), to spend the device time left: both continued runs once
# more from their last weights, 16 cross-view epochs for edge (2,400 steps) and 11 for
# generic (2,475 steps) at a peak rate of 1e-4, under a 225 s deadline (both were
# stopped near the end of their cosine schedules; their last weights scaled and sent).
set -uo pipefail
OUT=${OUT:?OUT names the folder whose files come back}
W=${WORK:-/tmp/gpu}
export PYTHONPATH=$W/site:$PWD PYTHONUNBUFFERED=1
python3 - "$W" <<'PY'
import sys, yaml
for name, epochs in [("edge", 16), ("generic", 11)]:
    recipe = yaml.safe_load(open(f"config/train/{name}-more-gpu.yaml"))
    recipe["stages"]["cross_view"]["epochs"] = epochs
    recipe["optim"]["lr"] = 1e-4
    yaml.safe_dump(recipe, open(f"{sys.argv[1]}/{name}-more2.yaml", "w"), sort_keys=False)
PY
again() {  # name, dataset
    timeout --foreground -k 40 -s TERM 225 python3 -m padformer_edge train \
        --config "$W/$1-more2.yaml" --data "$W/data/$2" --out "$W/runs/$1-more2" \
        --device cuda --init "$W/runs/$1-more/last.safetensors" >"$OUT/$1-more2.log" 2>&1
    echo "$1-more2 exit $?" | tee -a "$OUT/$1-more2.log"
}
again edge synth224-s0 & p1=$!
again generic generic & p2=$!
wait "$p1" "$p2"
for run in edge:synth224-s0 generic:generic; do
    name=${run%%:*}-more2 folder=$W/runs/${run%%:*}-more2 target=$OUT/${run%%:*}-more2.safetensors
    if [[ -f $folder/model.safetensors ]]; then
        cp "$folder/model.safetensors" "$target"
    else
        cp "$folder/last.safetensors" "$target"
        echo "$name: stopped early, scaled here" | tee -a "$OUT/$name.log"
        python3 -m training.score_scales "$target" "$W/data/${run##*:}"
    fi
done
ls -la "$OUT"
