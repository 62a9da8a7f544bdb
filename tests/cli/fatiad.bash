# tests/cli/fatiad.bash: start and stop a real fatiad for shell tests. Source after lib.bash.
#   start_fatiad DIR [ARGS...]  starts fatiad on DIR with a free port; sets URL, TOKEN, CA (the
#                               TLS certificate) and KCFG (the admin kubeconfig); waits until it
#                               serves (at most 20 s). The controllers stay off (--no-controllers:
#                               these tests own every object they write) unless FATIAD_CONTROLLERS=1.
#                               The agent's runtime is FATIAD_RUNTIME (default process: the tests
#                               written for host processes; fatiad's own default is auto, and a
#                               test's --agent runtime=... comes later and wins)
#   stop_fatiad                 SIGTERM, wait; fails the test if the exit status is not 0
#   find_kubectl                sets KUBECTL_DIR to the directory of kubectl.1.27 and .1.33, or
#                               skips the test (exit 77: lib.bash's skip)
#   api METHOD PATH [CURL ARGS] curl as admin; body in $TMP/body, status in $CODE
# FATIA_TEST_STORE=etcd: every fatiad of the test runs on one etcd (etcd.bash, started at the
# first start_fatiad), each data directory under its own key prefix (so a restart on the same
# directory finds its objects): the same test, the other store backend.
FATIAD=$BUILD/bin/fatiad
FATIAD_PID=
. "$(dirname "${BASH_SOURCE[0]}")/etcd.bash"

# fatiad_store_args DIR: the store flags of a data directory into FATIAD_STORE_ARGS (none for
# SQLite)
fatiad_store_args() {
    FATIAD_STORE_ARGS=
    [ "${FATIA_TEST_STORE:-sqlite}" = etcd ] || return 0
    if [ -z "${FATIAD_ETCD:-}" ]; then
        start_etcd store >&2 || return 1
        FATIAD_ETCD=$ETCD_URL
    fi
    FATIAD_STORE_ARGS="--store etcd --etcd-endpoints $FATIAD_ETCD"
    # etcd.bash's limits (a test's own flags come later and win)
    FATIAD_STORE_ARGS="$FATIAD_STORE_ARGS --etcd-max-request-bytes 10Mi --etcd-max-txn-ops 10240"
    FATIAD_STORE_ARGS="$FATIAD_STORE_ARGS --etcd-prefix /$(basename "$1")/registry"
}

start_fatiad() {
    local dir=$1
    shift
    local ctl=--no-controllers
    [ "${FATIAD_CONTROLLERS:-0}" = 1 ] && ctl=
    fatiad_store_args "$dir" || return 1
    : >"$dir.log" # emptied here: a restart must not read the former run's "serving" line
    "$FATIAD" --data-dir "$dir" --listen 127.0.0.1:0 $ctl $FATIAD_STORE_ARGS \
        --agent "runtime=${FATIAD_RUNTIME:-process}" "$@" >"$dir.log" 2>&1 &
    FATIAD_PID=$!
    for _ in $(seq 1000); do
        if grep -q "serving the Kubernetes API at" "$dir.log" 2>/dev/null; then
            URL=$(grep -o 'https\?://127\.0\.0\.[0-9]*:[0-9]*' "$dir.log" | tail -1)
            TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$dir/tokens")
            CA=$dir/tls.crt
            KCFG=$dir/kubeconfig
            return 0
        fi
        if ! kill -0 "$FATIAD_PID" 2>/dev/null; then
            cat "$dir.log" >&2
            fail "fatiad exited at start"
            return 1
        fi
        sleep 0.02
    done
    fail "fatiad did not start in 20 s"
    cat "$dir.log" >&2
    return 1
}

stop_fatiad() {
    [ -n "$FATIAD_PID" ] || return 0
    kill -TERM "$FATIAD_PID" 2>/dev/null
    wait "$FATIAD_PID"
    local rc=$?
    [ "$rc" = 0 ] || fail "fatiad exited $rc after SIGTERM"
    FATIAD_PID=
}

find_kubectl() {
    local k
    k=$(command -v kubectl 2>/dev/null) || true
    if [ -n "$k" ]; then
        KUBECTL_DIR=$(dirname "$(readlink -f "$k")")
    fi
    if [ -z "${KUBECTL_DIR:-}" ] || [ ! -x "$KUBECTL_DIR/kubectl.1.27" ] ||
        [ ! -x "$KUBECTL_DIR/kubectl.1.33" ]; then
        skip "kubectl not found (kubectl.1.27 and kubectl.1.33 beside kubectl)"
    fi
}

# api METHOD PATH [curl args...]: as admin (or as $AS_TOKEN when set)
api() {
    local method=$1 path=$2
    shift 2
    CODE=$(curl -s -o "$TMP/body" -w '%{http_code}' --cacert "$CA" -X "$method" \
        -H "Authorization: Bearer ${AS_TOKEN:-$TOKEN}" "$@" "$URL$path")
}

trap 'if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; etcd_cleanup; rm -rf "$TMP"' EXIT
