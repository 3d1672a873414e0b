#!/usr/bin/env bash
# One epoch of Fashion-MNIST training, ember against libtorch's C++ frontend (bench_train.cpp):
# runs every (framework, model, threads) configuration in its own process, alternating the
# frameworks (ember, libtorch, ember, ...; which one goes first flips every repetition), then
# prints a markdown table of medians and ember / libtorch ratios, each framework at its best
# thread count, with the peak resident memory of each.
#
#   bench/run_bench_train.sh [BUILD_DIR=build]
#
# Environment (defaults in brackets):
#   MODELS ["mlp cnn"]   THREADS ["1 2"]   MLP_REPS [5]   CNN_REPS [2]
#   CNN_BATCHES [all]    run only the first N batches of each CNN epoch and scale the time to
#                        the full epoch (the accuracy is then that of a partial epoch)
#   LAYERS [0]           1: afterwards, one --layers 1 run per framework and model at 1 thread,
#                        printed as a per-layer forward / backward table
#   LAYERS_CNN_BATCHES [100]  batches of the CNN's --layers runs (scaled to the epoch)
#   OUT [BUILD_DIR/bench_train_results.jsonl]  where the JSON lines go (appended to)
#   MALLOC [tuned]       bench_train --malloc: tuned fixes glibc's mmap / trim thresholds so that
#                        libtorch runs in its fast state; default leaves glibc alone (Note
#                        [glibc malloc and libtorch] in bench_train.cpp)
#
# ember runs use bench_train_ember (the same program without libtorch linked in) when it
# exists, so that their peak memory does not count libtorch's libraries. OPENBLAS_NUM_THREADS=1
# keeps libtorch's OpenBLAS from adding threads on top of its own pool.
set -euo pipefail

BUILD=${1:-build}
MODELS=${MODELS:-"mlp cnn"}
THREADS=${THREADS:-"1 2"}
MLP_REPS=${MLP_REPS:-5}
CNN_REPS=${CNN_REPS:-2}
CNN_BATCHES=${CNN_BATCHES:-all}
LAYERS=${LAYERS:-0}
LAYERS_CNN_BATCHES=${LAYERS_CNN_BATCHES:-100}
OUT=${OUT:-$BUILD/bench_train_results.jsonl}
MALLOC=${MALLOC:-tuned}
export OPENBLAS_NUM_THREADS=1

TORCH_BIN=$BUILD/bench/bench_train
EMBER_BIN=$BUILD/bench/bench_train_ember
[ -x "$EMBER_BIN" ] || EMBER_BIN=$TORCH_BIN
[ -x "$TORCH_BIN" ] || { echo "no $TORCH_BIN: build the bench_train target first" >&2; exit 1; }

run() {  # framework model threads [extra args]
  local bin=$TORCH_BIN
  [ "$1" = ember ] && bin=$EMBER_BIN
  echo "+ OPENBLAS_NUM_THREADS=1 $bin --framework $1 --model $2 --threads $3 --malloc $MALLOC ${*:4}" >&2
  "$bin" --framework "$1" --model "$2" --threads "$3" --malloc "$MALLOC" "${@:4}" | tee -a "$OUT" >&2
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "load at start: $(cut -d' ' -f1-3 /proc/loadavg), glibc malloc: $MALLOC" >&2
START_LINE=1
[ -f "$OUT" ] && START_LINE=$(($(wc -l <"$OUT") + 1))
for model in $MODELS; do
  reps=$MLP_REPS
  extra=(--epochs 1)
  if [ "$model" = cnn ]; then
    reps=$CNN_REPS
    [ "$CNN_BATCHES" = all ] || extra+=(--batches "$CNN_BATCHES")
  fi
  for ((r = 0; r < reps; ++r)); do
    for t in $THREADS; do
      if ((r % 2 == 0)); then order="ember torch"; else order="torch ember"; fi
      for f in $order; do run "$f" "$model" "$t" "${extra[@]}"; done
    done
  done
done
if [ "$LAYERS" = 1 ]; then
  for model in $MODELS; do
    extra=()
    [ "$model" = cnn ] && extra=(--batches "$LAYERS_CNN_BATCHES")
    for f in ember torch; do run "$f" "$model" 1 --layers 1 "${extra[@]}"; done
  done
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

RUN_LINES=$(mktemp)
trap 'rm -f "$RUN_LINES"' EXIT
tail -n +"$START_LINE" "$OUT" >"$RUN_LINES"

# ---- the summary: medians per (model, framework, threads), then the table ----
python3 - "$RUN_LINES" <<'EOF'
import json, statistics, sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
timed = [r for r in runs if "layers" not in r]
profiled = [r for r in runs if "layers" in r]
groups = defaultdict(list)
for r in timed:
    groups[(r["model"], r["framework"], r["threads"])].append(r)

def med(rs, key):
    return statistics.median(r[key] for r in rs)

def mb(kb):
    return kb / 1024.0

name = {"ember": "ember", "torch": "libtorch"}
target = {"mlp": 0.5, "cnn": 0.8}
optim = {"mlp": "SGD(lr 0.01, momentum 0.9)", "cnn": "Adam(lr 1e-3)"}
models = [m for m in ("mlp", "cnn") if any(r["model"] == m for r in runs)]

if timed:
    print("### Per thread count (medians)\n")
    print("| model | threads | ember s/epoch | libtorch s/epoch | ember / libtorch | runs | "
          "ember test acc | libtorch test acc | ember loss | libtorch loss |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        for t in sorted({k[2] for k in groups if k[0] == m}):
            e, l = groups.get((m, "ember", t), []), groups.get((m, "torch", t), [])
            if not e or not l:
                continue
            es, ls = med(e, "epoch_seconds"), med(l, "epoch_seconds")
            print(f"| {m} | {t} | {es:.3f} | {ls:.3f} | {es / ls:.2f} | {len(e)}+{len(l)} | "
                  f"{med(e, 'test_acc'):.4f} | {med(l, 'test_acc'):.4f} | "
                  f"{med(e, 'train_loss_last100'):.3f} | {med(l, 'train_loss_last100'):.3f} |")

    print("\n### Each at its best thread count\n")
    print("| model (optimizer) | ember s/epoch (threads) | libtorch s/epoch (threads) | "
          "ember / libtorch | target | ember samples/s | libtorch samples/s | "
          "ember peak RSS MB (training) | libtorch peak RSS MB (training) | batches timed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for m in models:
        for f in ("ember", "torch"):
            cands = [(med(rs, "epoch_seconds"), k[2], rs) for k, rs in groups.items()
                     if k[0] == m and k[1] == f]
            if cands:
                best[(m, f)] = min(cands, key=lambda c: c[0])
        if (m, "ember") not in best or (m, "torch") not in best:
            continue
        (es, et, er), (ls, lt, lr) = best[(m, "ember")], best[(m, "torch")]
        ratio = es / ls
        verdict = "met" if ratio <= target[m] else "missed"
        bt = er[0]["batches_timed"]
        bt_txt = "all" if bt == er[0]["batches_per_epoch"] else f"{bt} of {er[0]['batches_per_epoch']}, scaled"
        print(f"| {m} ({optim[m]}) | {es:.3f} ({et}) | {ls:.3f} ({lt}) | {ratio:.2f} | "
              f"<= {target[m]} ({verdict}) | {med(er, 'samples_per_s'):.0f} | "
              f"{med(lr, 'samples_per_s'):.0f} | {mb(med(er, 'maxrss_kb')):.0f} "
              f"({mb(med(er, 'train_peak_rss_kb')):.0f}) | {mb(med(lr, 'maxrss_kb')):.0f} "
              f"({mb(med(lr, 'train_peak_rss_kb')):.0f}) | {bt_txt} |")

    for m in models:
        if (m, "ember") in best and (m, "torch") in best:
            ea, la = med(best[(m, "ember")][2], "test_acc"), med(best[(m, "torch")][2], "test_acc")
            ok = "ok" if abs(ea - la) <= 0.03 else "MISMATCH: check the models"
            print(f"\nSanity, {m}: test accuracy ember {ea:.4f}, libtorch {la:.4f} ({ok}).", end="")
    print()
    print("\nPeak RSS: getrusage ru_maxrss of the whole process (libraries, the data set, training "
          "and evaluation); in brackets the peak from the start to the end of training alone "
          "(VmHWM reset when training starts).")

    print("\n### Where the epoch goes, each at its best thread count (medians, s/epoch)\n")
    print("| model | framework | data | forward + loss | zero_grad + backward | optimizer step |")
    print("|---|---|---|---|---|---|")
    for m in models:
        for f in ("ember", "torch"):
            if (m, f) in best:
                rs = best[(m, f)][2]
                print(f"| {m} | {name[f]} ({best[(m, f)][1]}T) | {med(rs, 'data_s'):.3f} | "
                      f"{med(rs, 'forward_s'):.3f} | {med(rs, 'backward_s'):.3f} | "
                      f"{med(rs, 'step_s'):.3f} |")

for m in models:
    e = [r for r in profiled if r["model"] == m and r["framework"] == "ember"]
    l = [r for r in profiled if r["model"] == m and r["framework"] == "torch"]
    if not e or not l:
        continue
    e, l = e[-1], l[-1]
    print(f"\n### {m}: per layer, {e['threads']} thread, s/epoch (one --layers 1 run each)\n")
    print("| layer | ember fwd | libtorch fwd | ratio | ember bwd | libtorch bwd | ratio |")
    print("|---|---|---|---|---|---|---|")
    for a, b in zip(e["layers"], l["layers"]):
        rf = a["forward_s"] / b["forward_s"] if b["forward_s"] > 0 else float("nan")
        rb = a["backward_s"] / b["backward_s"] if b["backward_s"] > 0 else float("nan")
        print(f"| {a['name']} | {a['forward_s']:.3f} | {b['forward_s']:.3f} | {rf:.2f} | "
              f"{a['backward_s']:.3f} | {b['backward_s']:.3f} | {rb:.2f} |")

if runs:
    print(f"\nData: {runs[0]['data'].split(';')[0]}; ember batches from data::DataLoader "
          "(shuffle, no workers), libtorch batches from a seeded randperm + index_select on "
          "zero-copy views of the same uint8 tensors, both converted to float32 / 255 per batch.")
EOF
