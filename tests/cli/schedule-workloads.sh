# tests/cli/schedule-workloads.sh: the way `fatia schedule` tells a user with Jobs and Pods to get
# their Workloads works: create them in a real fatiad (controllers on), `kubectl get workloads -A
# -o yaml`, and schedule that file with examples/: every Workload of examples/jobs/ is read.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
command -v kubectl >/dev/null || { fail "kubectl not found"; finish; }
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" -f examples/ || finish
export KUBECONFIG=$KCFG
expect_rc 0 kubectl create -f examples/jobs/
n=0
for _ in $(seq 100); do
    n=$(kubectl get workloads -A --no-headers 2>/dev/null | wc -l)
    [ "$n" -ge 6 ] && break
    sleep 0.2
done
[ "$n" = 6 ] || fail "fatiad made $n Workloads of examples/jobs/, want 6"
# wait for fatiad's admissions to settle (urgent-eval, train-b1, serve-llm and the notebook)
for _ in $(seq 100); do
    [ "$(kubectl get workloads -A --no-headers 2>/dev/null | awk '$5 == "True"' | wc -l)" -ge 4 ] && break
    sleep 0.2
done
kubectl get workloads -A -o yaml >"$TMP/workloads.yaml" || fail "kubectl get workloads failed"
stop_fatiad
# the admitted Workloads hold their quota (the Pod's time-slice, the Job's MIG instance), the
# others queue behind them
expect_rc 0 "$FATIA" schedule -f examples/ -f "$TMP/workloads.yaml"
grep -qE '^team-b +research +h200 +nvidia.com/gpu.shared +4 +- +1 ' "$TMP/out" ||
    fail "the notebook Pod's Workload holds no gpu.shared"
grep -qE '^team-b +research +h200 +nvidia.com/mig-3g.71gb +1 +- +1 ' "$TMP/out" ||
    fail "the serve-llm Job's Workload holds no MIG 3g.71gb"
grep -qE '^team-a/job-train-a[12]-' "$TMP/out" || fail "train-a1/a2 are not pending"
grep -q "skipped" "$TMP/err" && fail "the Workloads file was reported as skipped: $(cat "$TMP/err")"
finish
