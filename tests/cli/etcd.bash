# tests/cli/etcd.bash: start and stop real etcd members (Debian's etcd-server) on loopback for
# shell tests, each with its own data directory under $TMP. Source after lib.bash.
#   start_etcd NAME [N]   starts an N-member cluster (default 1) named NAME; sets ETCD_URLS
#                         (the client URLs, comma-separated), ETCD_URL (the first), and
#                         ETCD_PIDS_<NAME> / ETCD_URL_<NAME>_<i>; waits until it serves (20 s)
#   stop_etcd NAME        SIGTERM, wait
#   restart_etcd_member NAME I [FLAGS...]
#                         SIGTERM member I, start it again on its data directory with FLAGS
#                         added (a flag given twice: the last one counts); waits until it serves
#                         unless ETCD_NO_WAIT is set
#   etcdctl_ ARGS...      etcdctl (API v3) against $ETCD_URLS
# fatiad.bash's start_fatiad puts fatiad on etcd when FATIA_TEST_STORE=etcd: it starts one
# etcd per test (lazily) and gives each data directory its own key prefix.
ETCD_ALL_PIDS=()
ETCD_FLAGS=(--max-txn-ops 10240 --max-request-bytes 10485760 --heartbeat-interval 50
    --election-timeout 500 --logger zap --log-outputs stderr)

etcd_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_etcd() {
    local name=$1 n=${2:-1} i cluster="" urls="" pids=""
    command -v etcd >/dev/null || skip "etcd not installed (scripts/setup installs etcd-server)"
    local -a cp pp
    for i in $(seq "$n"); do
        cp[$i]=$(etcd_free_port)
        pp[$i]=$(etcd_free_port)
        cluster="$cluster${cluster:+,}$name-$i=http://127.0.0.1:${pp[$i]}"
        urls="$urls${urls:+,}http://127.0.0.1:${cp[$i]}"
    done
    for i in $(seq "$n"); do
        mkdir -p "$TMP/etcd-$name-$i"
        local -a argv=(--name "$name-$i" --data-dir "$TMP/etcd-$name-$i/data"
            --listen-client-urls "http://127.0.0.1:${cp[$i]}"
            --advertise-client-urls "http://127.0.0.1:${cp[$i]}"
            --listen-peer-urls "http://127.0.0.1:${pp[$i]}"
            --initial-advertise-peer-urls "http://127.0.0.1:${pp[$i]}"
            --initial-cluster "$cluster" --initial-cluster-token "$name-$$"
            "${ETCD_FLAGS[@]}")
        eval "ETCD_ARGV_${name//-/_}_$i=\$(printf '%q ' \"\${argv[@]}\")"
        etcd "${argv[@]}" >"$TMP/etcd-$name-$i.log" 2>&1 &
        pids="$pids $!"
        ETCD_ALL_PIDS+=("$!")
        eval "ETCD_URL_${name//-/_}_$i=http://127.0.0.1:${cp[$i]}"
        eval "ETCD_PID_${name//-/_}_$i=$!"
    done
    eval "ETCD_PIDS_${name//-/_}='$pids'"
    ETCD_URLS=$urls
    ETCD_URL=http://127.0.0.1:${cp[1]}
    for _ in $(seq 400); do
        if ETCDCTL_API=3 etcdctl --endpoints "$urls" --dial-timeout 1s endpoint health \
            >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.05
    done
    fail "etcd $name did not start in 20 s"
    cat "$TMP"/etcd-"$name"-*.log >&2
    return 1
}

stop_etcd() {
    local name=$1 p
    eval "p=\$ETCD_PIDS_${name//-/_}"
    for pid in $p; do
        { kill -TERM "$pid" && wait "$pid"; } 2>/dev/null
    done
}

restart_etcd_member() {
    local name=$1 i=$2 pid argv
    shift 2
    eval "pid=\$ETCD_PID_${name//-/_}_$i argv=\$ETCD_ARGV_${name//-/_}_$i"
    { kill -TERM "$pid" && wait "$pid"; } 2>/dev/null
    local extra=
    [ $# -gt 0 ] && extra=$(printf '%q ' "$@")
    eval "etcd $argv $extra" >>"$TMP/etcd-$name-$i.log" 2>&1 &
    ETCD_ALL_PIDS+=("$!")
    eval "ETCD_PID_${name//-/_}_$i=$!"
    [ -n "${ETCD_NO_WAIT:-}" ] && return 0 # a member of a cluster without quorum yet
    for _ in $(seq 400); do
        etcdctl_ --dial-timeout 1s endpoint health >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    fail "etcd $name-$i did not restart in 20 s"
    return 1
}

etcdctl_() {
    ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URLS" "$@"
}

etcd_cleanup() {
    for pid in "${ETCD_ALL_PIDS[@]}"; do
        { kill -9 "$pid" && wait "$pid"; } 2>/dev/null
    done
}
