#!/usr/bin/env bash
# The data-parallel MLP epoch: 2 processes x 1 thread (ember-run starting 2 ember-train ranks,
# DistributedDataParallel over Gloo on loopback, batch 64 per rank) against 1 process x 2 threads
# (batch 128: the same images per step, the same number of steps), and 1 process x 1 thread
# (batch 128) for reference. The configurations alternate (which one goes first rotates every
# repetition); each prints its train_seconds (ember-train's JSON line; rank 0's for the
# data-parallel run), then the medians and the ratios.
#
#   bench/dist_epoch.sh [BUILD_DIR=build]     # needs the ember-train and ember-run targets
#
# Environment (defaults in brackets):
#   REPS [3]            repetitions of each configuration
#   DATA_DIR [ember-train's default]   Fashion-MNIST's IDX files
#   TRAIN_SUBSET [all]  train on the first N images only (a smoke run: TRAIN_SUBSET=2048 REPS=1)
#   OUT [BUILD_DIR/dist_epoch_results.jsonl]   the JSON lines, appended to
#
# OPENBLAS_NUM_THREADS=1 so that no BLAS adds threads on top of ember's pool. train_seconds is
# the epoch's training loop only (not the data loading, the process start or the evaluation).
set -euo pipefail

BUILD=${1:-build}
REPS=${REPS:-3}
DATA_DIR=${DATA_DIR:-}
TRAIN_SUBSET=${TRAIN_SUBSET:-all}
OUT=${OUT:-$BUILD/dist_epoch_results.jsonl}
export OPENBLAS_NUM_THREADS=1

TRAIN=$BUILD/examples/ember-train
RUN=$BUILD/examples/ember-run
for bin in "$TRAIN" "$RUN"; do
  [ -x "$bin" ] || { echo "no $bin: build the ember-train and ember-run targets first" >&2; exit 1; }
done

common=(--model mlp --epochs 1)
[ -n "$DATA_DIR" ] && common+=(--data-dir "$DATA_DIR")
[ "$TRAIN_SUBSET" = all ] || common+=(--train-subset "$TRAIN_SUBSET")

LOG=$(mktemp)
RUN_LINES=$(mktemp)
trap 'rm -f "$LOG" "$LOG.out" "$RUN_LINES"' EXIT

run() {  # run CONFIG: one run of the configuration; its rank-0 JSON line, tagged, to $OUT
  local config=$1 cmd
  case $config in
    2x1) cmd=("$RUN" --nproc-per-node 2 "$TRAIN" "${common[@]}" --threads 1 --batch-size 64) ;;
    1x2) cmd=("$TRAIN" "${common[@]}" --threads 2 --batch-size 128) ;;
    1x1) cmd=("$TRAIN" "${common[@]}" --threads 1 --batch-size 128) ;;
  esac
  echo "+ OPENBLAS_NUM_THREADS=1 ${cmd[*]}" >&2
  if ! "${cmd[@]}" > "$LOG.out" 2> "$LOG"; then
    echo "dist_epoch: failed: ${cmd[*]}" >&2
    tail -20 "$LOG" >&2
    exit 1
  fi
  # The rank-0 line (the only one of a 1-process run), with the configuration added.
  python3 - "$config" "$LOG.out" << 'EOF' >> "$RUN_LINES"
import json, sys
config, path = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(path) if l.startswith("{")]
main = [r for r in lines if r.get("rank", 0) == 0]
if len(main) != 1:
    sys.exit(f"dist_epoch: expected one JSON line of rank 0, got {len(main)}")
r = main[0]
want = 2 if config == "2x1" else 1
if r["world_size"] != want:
    sys.exit(f"dist_epoch: {config} ran with world size {r['world_size']}, expected {want}")
r["config"] = config
print(json.dumps(r))
print(f"  {config}: train_seconds {r['train_seconds']:.3f}, steps {r['steps']}, "
      f"test_acc {r['test_acc']:.4f}", file=sys.stderr)
EOF
  tail -1 "$RUN_LINES" >> "$OUT"
  rm -f "$LOG.out"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
configs=(2x1 1x2 1x1)
for ((r = 0; r < REPS; ++r)); do
  for ((k = 0; k < ${#configs[@]}; ++k)); do
    run "${configs[$(((r + k) % ${#configs[@]}))]}"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$RUN_LINES" << 'EOF'
import json, statistics, sys

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in runs:
    by.setdefault(r["config"], []).append(r)
med = {c: statistics.median(r["train_seconds"] for r in rs) for c, rs in by.items()}
names = {"2x1": "2 processes x 1 thread (ember-run, DDP over Gloo, batch 64 per rank)",
         "1x2": "1 process x 2 threads (batch 128)",
         "1x1": "1 process x 1 thread (batch 128, reference)"}
r0 = runs[0]
print(f"MLP epoch, {r0['train_examples']} training images, {r0['steps']} steps of 128 images, "
      f"{r0['optimizer']} lr {r0['lr']}; train_seconds (the training loop only)\n")
print("| configuration | train_seconds of each run | median s | / 1 process x 2 threads | "
      "speedup over 1 x 1 | test acc (median) |")
print("|---|---|---|---|---|---|")
for c in ("2x1", "1x2", "1x1"):
    if c not in by:
        continue
    each = ", ".join(f"{r['train_seconds']:.2f}" for r in by[c])
    rel = f"{med[c] / med['1x2']:.2f}" if "1x2" in med else "-"
    speed = f"{med['1x1'] / med[c]:.2f}" if "1x1" in med else "-"
    acc = statistics.median(r["test_acc"] for r in by[c])
    print(f"| {names[c]} | {each} | {med[c]:.3f} | {rel} | {speed} | {acc:.4f} |")
EOF
