#!/bin/bash
# tests/cli/sim.sh: `fatia sim` on small traces whose outcome can be worked out by hand
# (tests/data/sim/): FIFO waits and an unplaceable job, Kueue admission with reclaim preemption and
# share of entitlement, the slowdown model and the service bound, dynamic MIG in virtual time, the
# Alibaba trace format with its node list, the fill mode (the FGD experiment) being reproducible,
# and bad traces rejected with file:line:column.
. "$(dirname "$0")/lib.bash"
D=tests/data/sim

# q JSON_FILE PYTHON_EXPR WANT: the expression over the report `d` prints WANT
q() {
    got=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(($2))" "$1" 2>&1)
    [ "$got" = "$3" ] || fail "$2: got '$got', want '$3'"
}

expect_rc 0 "$FATIA" sim -f $D/fleet-2gpu.yaml --trace $D/fifo.csv -o json
cp "$TMP/out" "$TMP/fifo.json"
q "$TMP/fifo.json" 'd["placedPods"], d["unplacedPods"], d["totalGpus"]' "(3, 1, 2)"
q "$TMP/fifo.json" 'd["queues"]["ml"]["waitSeconds"]["p50"], d["queues"]["ml"]["waitSeconds"]["p90"]' "(0.0, 100.0)"
q "$TMP/fifo.json" 'd["endSeconds"], d["gpuAllocationRate"], d["unallocatedGpus"]' "(200.0, 0.0, 2.0)"
q "$TMP/fifo.json" 'd["concurrency"]["whole"]["podsPerBusyGpu"]' "1.0"
expect_line "$TMP/err" "simulated in"

expect_rc 0 "$FATIA" sim -f $D/fleet-2gpu.yaml -f $D/kueue.yaml --trace $D/reclaim.csv -o json
cp "$TMP/out" "$TMP/kueue.json"
q "$TMP/kueue.json" 'd["preemptions"], d["queues"]["team-a"]["preempted"], d["queues"]["team-a"]["admitted"]' "(1, 1, 3)"
q "$TMP/kueue.json" 'd["endSeconds"]' "450.0"
# team-a: 2 GPUs for 50 s, 1 for 100 s, 2 for 150 s, 1 for 150 s = 650 GPU-s over 450 s, nominal 1
q "$TMP/kueue.json" 'round(d["queues"]["team-a"]["shareOfEntitlement"], 4)' "1.4444"
q "$TMP/kueue.json" 'round(d["queues"]["team-b"]["shareOfEntitlement"], 4)' "0.2222"

expect_rc 0 "$FATIA" sim -f $D/ts-fleet.yaml --trace $D/duty.csv --max-slowdown 2 -o json
cp "$TMP/out" "$TMP/duty.json"
q "$TMP/duty.json" 'd["users"]["served"], d["users"]["total"]' "(1, 3)"
q "$TMP/duty.json" 'd["concurrency"]["timeslice"]["maxPods"]' "3"
expect_rc 0 "$FATIA" sim -f $D/ts-fleet.yaml --trace $D/duty.csv --max-slowdown 4 -o json
q "$TMP/out" 'd["users"]["served"]' "3"

expect_rc 0 "$FATIA" sim -f $D/mig-fleet.yaml --trace $D/mig.csv --dynamic-mig free -o json
q "$TMP/out" 'd["placedPods"], d["unplacedPods"], d["queues"]["ml"]["waitSeconds"]["p90"]' "(2, 0, 90.0)"
expect_rc 0 "$FATIA" sim -f $D/mig-fleet.yaml --trace $D/mig.csv -o json
q "$TMP/out" 'd["placedPods"], d["unplacedPods"]' "(1, 1)"

expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv -o json
q "$TMP/out" 'd["totalGpus"], d["placedPods"], sorted(d["concurrency"])' "(20, 6, ['fraction'])"
# the T4-only pod waits for the T4 node, where binpack put the 2-GPU pod until t=300
q "$TMP/out" 'd["queues"]["alibaba"]["waitSeconds"]["p99"]' "250.0"

for p in binpack bestfit spread fragmentation fgd fgdpack fgdscarce; do
    expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement $p -o json
    cp "$TMP/out" "$TMP/fill-$p.json"
    q "$TMP/out" '[c["loadPct"] for c in d["checkpoints"]]' "[80, 90, 100, 110, 120, 130]"
    q "$TMP/out" 'all(c["allocatedGpus"] <= c["requestedGpus"] + 1e-9 for c in d["checkpoints"])' "True"
    expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement $p -o json
    cmp -s "$TMP/out" "$TMP/fill-$p.json" || fail "fill mode with $p is not reproducible"
done
# fgd is fragmentation with every artifact piece; its random ties come from the seed alone
expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement fragmentation --fgd score,ties,cpu,upfront,types -o json
cmp -s "$TMP/out" "$TMP/fill-fgd.json" || fail "--placement fgd is not fragmentation with --fgd all"
expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement fgd --fgd all,pack -o json
cmp -s "$TMP/out" "$TMP/fill-fgdpack.json" || fail "--placement fgdpack is not fgd with --fgd all,pack"
expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement fgd --fgd all,packcpu,scarce,fit -o json
cmp -s "$TMP/out" "$TMP/fill-fgdscarce.json" || fail "--placement fgdscarce is not fgd with --fgd all,packcpu,scarce,fit"
# the CPU-only pod of the list is a request type of fgd's mix, not of fragmentation's
q "$TMP/fill-fgd.json" 'd["requestTypes"]' "6"
expect_rc 2 "$FATIA" sim --trace $D/fifo.csv --fgd score,bogus
expect_line "$TMP/err" "--fgd: unknown choice 'bogus': expected score, ties, cpu, upfront, types, pack, packcpu, scarce, fit, all or none"
# --typical-coverage defaults to 100 (every request type), as the help says (it once said 60)
q "$TMP/fill-fragmentation.json" 'd["typicalTypes"], d["requestTypes"]' "(5, 5)"
expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement fragmentation --typical-coverage 100 -o json
cmp -s "$TMP/out" "$TMP/fill-fragmentation.json" || fail "--typical-coverage 100 is not the default"
expect_rc 0 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv --fill 130 --seed 7 --placement fragmentation --typical-coverage 60 -o json
q "$TMP/out" 'd["typicalTypes"], d["requestTypes"]' "(3, 5)"
expect_rc 0 "$FATIA" sim --help
expect_line "$TMP/out" "experiments use 95)"
expect_rc 2 "$FATIA" sim --trace $D/fifo.csv --typical-coverage 0

# below 100 % requested load an unplaced pod is the policy's doing, never the fleet's size
q "$TMP/fill-binpack.json" 'd["checkpoints"][0]["unallocatedGpus"] >= 0.2 * d["totalGpus"] - 1e-9' "True"

# hardware profiles: default requests, the profile's queue (the example LocalQueues) and bounds
expect_rc 0 "$FATIA" sim -R -f examples/ --trace $D/profiles.csv -o json
q "$TMP/out" 'd["queues"]["team-a"]["admitted"], d["queues"]["team-b"]["admitted"], d["placedPods"]' "(3, 1, 4)"
q "$TMP/out" 'sorted(d["concurrency"])' "['mig', 'timeslice', 'whole']"
printf 'time,namespace,name,profile,resources,duration\n0,team-a,big,gpu-catalog/notebook-shared,cpu=9,1h\n0,team-a,gone,gpu-catalog/nope,,1h\n' >"$TMP/prof.csv"
expect_rc 1 "$FATIA" sim -R -f examples/ --trace "$TMP/prof.csv"
expect_line "$TMP/err" "prof.csv:2:1: error: big: resources: 9 outside HardwareProfile notebook-shared's range for cpu"
expect_line "$TMP/err" "prof.csv:3:1: error: gone: profile: HardwareProfile gpu-catalog/nope not found"

# bad input
printf 'time,namespace,resources,duration\nsoon,ml,nvidia.com/gpu=1,10\n' >"$TMP/bad.csv"
expect_rc 1 "$FATIA" sim -f $D/fleet-2gpu.yaml --trace "$TMP/bad.csv"
expect_line "$TMP/err" "bad.csv:2:1: error: time: expected seconds or a duration (90s, 5m), got 'soon'"
printf 'time,namespace,resources,duration\n0,ml,nvidia.com/gpu,10\n' >"$TMP/bad2.csv"
expect_rc 1 "$FATIA" sim -f $D/fleet-2gpu.yaml --trace "$TMP/bad2.csv"
expect_line "$TMP/err" "error: resources: expected name=quantity;..., got 'nvidia.com/gpu'"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,0\n' >"$TMP/bad3.csv"
expect_rc 1 "$FATIA" sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace "$TMP/bad3.csv"
expect_line "$TMP/err" "bad3.csv:2:13: error: gpu_milli: 0 is not a share of one GPU (1..1000)"
expect_rc 2 "$FATIA" sim -f $D/fleet-2gpu.yaml
expect_rc 1 "$FATIA" sim --trace $D/fifo.csv
expect_line "$TMP/err" "no fleet"
finish
