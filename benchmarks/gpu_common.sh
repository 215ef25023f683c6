# Shared by the prepared GPU script (gpu_session.sh): sourced, not run,
# after the script has set its DEADLINE. The rest comes from the environment or defaults.
OUT=${OUT:?OUT names the folder whose files come back}
BUNDLE=${BUNDLE:-.gpu/bundle}
WORK=${WORK:-.gpu/work}  # the unpacked bundle, recipes and runs, inside the checkout
DEVICE=${DEVICE:-cuda}

# Unpack the bundle into $WORK, log everything to $OUT/session.log, put the unpacked
# site folder and this checkout on the path, and say which card is there.
gpu_setup() {
    exec > >(tee "$OUT/session.log") 2>&1
    python3 benchmarks/gpu_bundle.py unpack --bundle "$BUNDLE" --to "$WORK" || exit 1
    export PYTHONPATH="${SITE:-$WORK/site}:$PWD" PYTHONUNBUFFERED=1
    python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) \
if torch.cuda.is_available() else 'no GPU')"
}

# The edge GPU recipe written to $1 with $2 within-view and $3 cross-view epochs and $4
# loader workers; with $5 (a ModelConfig switch) set false, Table 3's ablation of that module.
edge_recipe() {
    python3 - "$@" <<'PY' || exit 1
import sys, yaml
out, within, cross, workers, switch = (sys.argv[1:] + [""])[:5]
recipe = yaml.safe_load(open("config/train/edge-synth-gpu.yaml"))
recipe["stages"]["within_view"]["epochs"] = int(within)
recipe["stages"]["cross_view"]["epochs"] = int(cross)
recipe["data"]["num_workers"] = int(workers)
if switch:
    recipe["model"]["overrides"] = {switch: False}
yaml.safe_dump(recipe, open(out, "w"), sort_keys=False)
PY
}

# The edge recipe with three times its CPU steps (3 + 9 epochs), written to $1; with
# $2 (a ModelConfig switch) set false, Table 3's ablation of that module.
three_times_recipe() {
    edge_recipe "$1" 3 9 3 "${2:-}"
}

# One training under the deadline: name, recipe, dataset, then any train options. A run
# still going at DEADLINE is stopped like Ctrl-C (--foreground: only the trainer gets
# the signal, so it can still stop its loader workers itself) and writes a resume point.
train() {
    local name=$1 recipe=$2 data=$3 start=$SECONDS
    shift 3
    timeout --foreground -k 90 -s TERM "$DEADLINE" python3 -m padformer_edge train \
        --config "$recipe" --data "$WORK/data/$data" --out "$WORK/runs/$name" \
        --device "$DEVICE" "$@" >"$OUT/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - start)) s" | tee -a "$OUT/$name.log"
}

# Send each NAME:DATASET run's weights to $OUT. A run stopped early sends a scaled copy of
# its last weights: last.safetensors must stay as its resume point recorded it, or
# `train --resume` refuses to continue the run.
send_weights() {
    local run name data folder
    for run in "$@"; do
        name=${run%%:*} data=${run##*:} folder="$WORK/runs/${run%%:*}"
        if [[ -f "$folder/model.safetensors" ]]; then
            cp "$folder/model.safetensors" "$OUT/$name.safetensors"
        elif [[ -f "$folder/last.safetensors" ]]; then
            echo "$name: stopped early; sending its last weights, scaled here" \
                | tee -a "$OUT/$name.log"
            cp "$folder/last.safetensors" "$OUT/$name.safetensors"
            python3 -m training.score_scales "$OUT/$name.safetensors" "$WORK/data/$data"
        else
            echo "$name: no weights written" | tee -a "$OUT/$name.log"
        fi
    done
}

# A call returns at most eight files from $OUT (the second session lost a log that way),
# so the logs go back as one archive; the weights stay separate files.
pack_logs() {
    tar -czf "$OUT/logs.tar.gz" -C "$OUT" --exclude=logs.tar.gz $(cd "$OUT" && ls *.log *.json 2>/dev/null)
    (cd "$OUT" && rm -f -- *.log *.json)
}
