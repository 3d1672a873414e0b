#!/usr/bin/env bash
# Two "hosts" in network namespaces joined by a veth pair (198.18.0.1 and 198.18.0.2, from the
# benchmarking range 198.18.0.0/15; no default route, nothing else reachable) run a 2-node
# ember-train job, one ember-run per node and Gloo over the veth link. Then a second, longer job
# has its link taken down mid-training: both sides must fail -- a non-zero exit with the root
# cause -- within the timeouts (--dist-timeout for the collectives, --rdzv-timeout for the
# launchers' store), and leave no process behind.
#
#   bash two_hosts.sh EMBER_RUN EMBER_TRAIN        (CTest: dist_two_hosts; needs root and ip)
#
# Prints "SKIPPED: ..." and exits 0 where namespaces cannot be made (no root, no CAP_NET_ADMIN,
# no iproute2): CTest's SKIP_REGULAR_EXPRESSION reports the test as skipped with the reason.
set -uo pipefail
run=$1
train=$2
tag="em$$"
a="${tag}a"
b="${tag}b"
work=$(mktemp -d)
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  ip netns pids "$a" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns pids "$b" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

skip() {
  echo "SKIPPED: $*"
  exit 0
}
fail() {
  echo "FAILED: $*"
  for f in "$work"/*.log; do [[ -f "$f" ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
  exit 1
}

command -v ip > /dev/null || skip "no 'ip' command (apt-get install iproute2)"
err=$(ip netns add "$a" 2>&1) || skip "cannot create a network namespace: $err"
ip netns add "$b" || skip "cannot create a second network namespace"
err=$(ip link add "${tag}x" type veth peer name "${tag}y" 2>&1) || skip "cannot create a veth pair: $err"
ip link set "${tag}x" netns "$a" && ip link set "${tag}y" netns "$b" || fail "moving the veth ends"
ip -n "$a" addr add 198.18.0.1/24 dev "${tag}x" && ip -n "$b" addr add 198.18.0.2/24 dev "${tag}y" ||
  fail "assigning addresses"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}x" up && ip -n "$b" link set "${tag}y" up || fail "bringing the link up"

# Runs one node's launcher in its namespace, in the background; its pid goes to $! .
launch() {  # launch NS NODE_RANK IFACE LOG ARGS...
  local ns=$1 node=$2 iface=$3 log=$4
  shift 4
  ip netns exec "$ns" env GLOO_SOCKET_IFNAME="$iface" "$run" --nnodes 2 --node-rank "$node" \
    --nproc-per-node 1 --master-addr 198.18.0.1 --master-port 29500 "$@" > "$log" 2>&1 &
}

# Waits for pid up to $2 seconds; sets $status to its exit status, or "timeout" (then kills it).
# (Not in a $(...) subshell: only this shell can wait for its children.)
wait_for() {
  local pid=$1 limit=$2 t=0
  while kill -0 "$pid" 2> /dev/null; do
    if ((t >= limit * 10)); then
      kill -KILL "$pid" 2> /dev/null
      wait "$pid" 2> /dev/null
      status=timeout
      return
    fi
    sleep 0.1
    t=$((t + 1))
  done
  wait "$pid"
  status=$?
}

# 1. A 2-node job over the link.
common=(--rdzv-timeout 30 "$train" --model mlp --epochs 1 --train-subset 512 --threads 1
        --dist-timeout 20)
launch "$a" 0 "${tag}x" "$work/job0.log" "${common[@]}"
p0=$!
launch "$b" 1 "${tag}y" "$work/job1.log" "${common[@]}"
p1=$!
pids=("$p0" "$p1")
wait_for "$p0" 120
s0=$status
wait_for "$p1" 120
s1=$status
[[ "$s0" == 0 && "$s1" == 0 ]] || fail "the 2-node job ended with $s0 (node 0) and $s1 (node 1)"
grep -q '"world_size": 2' "$work/job0.log" && grep -q '"rank": 1, "world_size": 2' "$work/job1.log" ||
  fail "the ranks' JSON lines do not say rank and world size 2"
grep -q 'data-parallel over 2 ranks (gloo' "$work/job0.log" || fail "rank 0 did not train over gloo"
echo "2-node job: both nodes finished, $(grep -o '"test_acc": [0-9.]*' "$work/job0.log")"

# 2. The link goes down mid-training: both sides fail within the timeouts.
dist_timeout=3
rdzv_timeout=6
long=(--rdzv-timeout "$rdzv_timeout" "$train" --model mlp --epochs 50 --threads 1
      --dist-timeout "$dist_timeout")
launch "$a" 0 "${tag}x" "$work/down0.log" "${long[@]}"
p0=$!
launch "$b" 1 "${tag}y" "$work/down1.log" "${long[@]}"
p1=$!
pids=("$p0" "$p1")
for _ in $(seq 1 600); do  # until rank 0 reports training progress (60 s at most)
  grep -q 'epoch 1/50: [0-9]' "$work/down0.log" && break
  kill -0 "$p0" 2> /dev/null || fail "node 0 ended before training"
  sleep 0.1
done
grep -q 'epoch 1/50: [0-9]' "$work/down0.log" || fail "the long job never started training"
ip -n "$b" link set "${tag}y" down || fail "taking the link down"
start=$(date +%s%N)
limit=$((dist_timeout + rdzv_timeout + 10))
wait_for "$p0" "$limit"
s0=$status
t0=$(( ($(date +%s%N) - start) / 1000000 ))
wait_for "$p1" "$limit"
s1=$status
t1=$(( ($(date +%s%N) - start) / 1000000 ))
echo "link down: node 0 ended with $s0 after ${t0} ms, node 1 with $s1 after ${t1} ms"
[[ "$s0" != timeout && "$s1" != timeout ]] || fail "a node did not stop within $limit s of the link going down"
[[ "$s0" != 0 && "$s1" != 0 ]] || fail "a node exited 0 although its link went down"
for n in 0 1; do
  grep -q "ember-run: rank $n .*exited with code 1" "$work/down$n.log" ||
    fail "node $n's launcher did not name its rank's failure as the root cause"
  grep -Eq "\\[rank $n\\] ember-train: error: dist: .*(timeout|peer lost)" "$work/down$n.log" ||
    fail "rank $n's error does not say timeout or peer lost"
done
left=$( (ip netns pids "$a"; ip netns pids "$b") 2> /dev/null | wc -l)
((left == 0)) || fail "$left processes left in the namespaces"
grep -h "^ember-run: rank" "$work/down0.log" "$work/down1.log"
echo "two hosts: OK"
