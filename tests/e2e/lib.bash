# tests/e2e/lib.bash: helpers for the end-to-end tests (real fatiad, real kubectl). Source after
# tests/cli/lib.bash and tests/cli/fatiad.bash.
#   e2e_start [ARGS...]      fatiad on $TMP/data with the walkthrough fleet and examples/ applied
#                            (plus ARGS); sets K (kubectl 1.33 with the admin kubeconfig)
#   wait_until SECS CMD...   polls CMD every 0.1 s until it succeeds (fails the test otherwise)
#   jp KIND NAME -n NS PATH  kubectl get -o jsonpath=PATH
#   pod_of_job NS JOB        the name of the job's newest pod
#   set_phase NS POD PHASE   writes status.phase (the tests' stand-in for the node agent)
#   watch_pods FILE          starts a watch of every pod (JSON lines) into FILE; WATCH_PID
#   metrics                  GET /metrics into $TMP/metrics
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# NO_AGENT: --no-agent when this fatiad has a node agent (tests that play the agent themselves)
NO_AGENT=
"$FATIAD" --help 2>/dev/null | grep -q -- --no-agent && NO_AGENT=--no-agent

e2e_start() {
    start_fatiad "$TMP/data" --fleet examples/fleet/ -f examples/ "$@" || return 1
    K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
    # the controllers have published the node once it is there
    wait_until 20 $K get node box-0 -o name
}

wait_until() {
    local secs=$1
    shift
    local end=$((SECONDS + secs))
    while ! "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $end ]; then
            fail "timed out after ${secs}s waiting for: $*"
            return 1
        fi
        sleep 0.1
    done
}

jp() {
    $K get "$@" 2>/dev/null
}

# wl_of NS OWNER-NAME: the workload whose job-uid label is the owner's uid
wl_of() {
    local uid
    uid=$($K get job "$2" -n "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null)
    [ -n "$uid" ] || uid=$($K get pod "$2" -n "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null)
    $K get workloads -n "$1" -l "kueue.x-k8s.io/job-uid=$uid" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null
}

wl_cond() { # NS WL TYPE -> status
    $K get workload "$2" -n "$1" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}" 2>/dev/null
}

pods_of_job() {
    $K get pods -n "$1" -l "batch.kubernetes.io/job-name=$2" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null
}

pod_of_job() {
    $K get pods -n "$1" -l "batch.kubernetes.io/job-name=$2" --sort-by=.metadata.creationTimestamp \
        -o jsonpath='{.items[-1:].metadata.name}' 2>/dev/null
}

# has_pod NS JOB: the job has a bound pod
has_bound_pod() {
    local p
    p=$(pod_of_job "$1" "$2")
    [ -n "$p" ] && [ -n "$($K get pod "$p" -n "$1" -o jsonpath='{.spec.nodeName}')" ]
}

set_phase() {
    $K patch pod "$2" -n "$1" --subresource=status --type=merge \
        -p "{\"status\":{\"phase\":\"$3\"}}" >/dev/null
}

job_cond() { # NS JOB TYPE
    $K get job "$2" -n "$1" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}" 2>/dev/null
}

is_true() { # CMD... prints True
    [ "$("$@")" = True ]
}

watch_pods() {
    curl -sN --cacert "$CA" -H "Authorization: Bearer $TOKEN" \
        "$URL/api/v1/pods?watch=1&resourceVersion=${2:-0}" >>"$1" 2>/dev/null &
    WATCH_PID=$!
}

metrics() {
    curl -s --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$URL/metrics" >"$TMP/metrics"
}

# metric NAME LABELS: the value of one sample ("" if absent)
metric() {
    awk -v n="$1" -v l="$2" '$1 == n"{"l"}" || ($1 == n && l == "") {print $2}' "$TMP/metrics"
}

# cq_usage CQ FLAVOR RESOURCE: flavorsUsage total
cq_usage() {
    $K get cq "$1" -o jsonpath="{.status.flavorsUsage[?(@.name==\"$2\")].resources[?(@.name==\"$3\")].total}"
}

# Predicates for wait_until (they run their command each time):
#   out_is WANT CMD...   CMD prints exactly WANT
#   out_empty CMD...     CMD prints nothing
#   out_nonempty CMD...  CMD prints something
out_is() {
    local want=$1
    shift
    [ "$("$@" 2>/dev/null)" = "$want" ]
}
out_empty() { [ -z "$("$@" 2>/dev/null)" ]; }
out_nonempty() { [ -n "$("$@" 2>/dev/null)" ]; }
pods_of_job_count() { pods_of_job "$@" | grep -c .; }
