# tests/cli/engine_drain.sh: a model server scaled down or preempted drains (docs/serving.md,
# "Drain on preemption and scale-down"): two engine-sims share one port (SO_REUSEPORT, as the
# replicas of one InferenceService do), a gateway in front; while 16 streamed completions run,
# one replica gets SIGTERM (what the agent sends a pod being deleted). It stops taking
# connections (the kernel gives the port's new ones to the other replica), answers /health 503,
# finishes every request it holds and exits before its drain timeout; requests sent during the
# drain are answered by the other replica; no request is lost or cut. The same with
# --drain-timeout 0 cuts streams: the check can fail.
. "$(dirname "$0")/lib.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

start() {
    local nm=$1
    shift
    rm -f "$TMP/$nm.port"
    "$@" --port-file "$TMP/$nm.port" 2>"$TMP/$nm.log" &
    eval "PID_$nm=$!"
    PIDS="$PIDS $!"
    for _ in $(seq 250); do
        [ -s "$TMP/$nm.port" ] && break
        sleep 0.02
    done
}

# round NAME DRAIN: two replicas on one port, load, SIGTERM to the first; leaves the streams'
# outputs in $TMP/NAME.s*.out and the others' HTTP codes in $TMP/NAME.codes
round() {
    local name=$1 drain=$2 i
    start "${name}a" "$FATIA" engine-sim --listen 127.0.0.1:0 --reuse-port --drain-timeout "$drain"
    local port
    port=$(cat "$TMP/${name}a.port")
    start "${name}b" "$FATIA" engine-sim --listen "127.0.0.1:$port" --reuse-port
    start "${name}gw" "$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms \
        --metrics-interval 20ms --endpoints "http://127.0.0.1:$port"
    local gw
    gw=$(cat "$TMP/${name}gw.port")
    for _ in $(seq 250); do
        curl -s "localhost:$gw/metrics" | grep -q 'fatia_gateway_endpoint_ready{.*} 1' && break
        sleep 0.02
    done
    # 16 streams of 250 tokens (about 2 s each at real time)
    for i in $(seq 16); do
        curl -sN "localhost:$gw/v1/completions" -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"stream $i of round $name, some words\",\"max_tokens\":250,\"stream\":true}" \
            >"$TMP/$name.s$i.out" 2>/dev/null &
        eval "S$i=$!"
    done
    sleep 0.6
    eval "kill -TERM \$PID_${name}a"
    : >"$TMP/$name.codes"
    for i in $(seq 8); do
        curl -s -o /dev/null -w '%{http_code}\n' "localhost:$gw/v1/completions" \
            -d '{"model":"llama-3.1-8b","prompt":"during the drain","max_tokens":4}' >>"$TMP/$name.codes"
    done
    for i in $(seq 16); do eval "wait \$S$i"; done
}

round d 30s
# the drained replica held requests when told, finished them, and stopped on its own
grep -q "draining: no new connections, [1-9][0-9]* requests in flight" "$TMP/da.log" ||
    fail "the replica held no request when it was told to stop: $(cat "$TMP/da.log")"
for _ in $(seq 100); do kill -0 "$PID_da" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID_da" 2>/dev/null && fail "the draining replica did not stop"
expect_line "$TMP/da.log" "fatia engine-sim: drained, stopping"
wait "$PID_da"
[ $? = 0 ] || fail "the drained replica exited with an error"
for i in $(seq 16); do
    n=$(grep -c '^data: {' "$TMP/d.s$i.out")
    [ "$n" = 250 ] && grep -q '^data: \[DONE\]' "$TMP/d.s$i.out" ||
        fail "stream $i lost tokens in the drain: $n of 250"
done
[ "$(sort -u "$TMP/d.codes")" = 200 ] || fail "requests during the drain: $(sort "$TMP/d.codes" | uniq -c)"
# the other replica is still serving
expect_rc 0 curl -sf "localhost:$(cat "$TMP/dgw.port")/v1/completions" -d '{"model":"llama-3.1-8b","prompt":"after","max_tokens":2}'

# without a drain (timeout 0) the replica's streams are cut: what the test above guards
round z 0s
cut=0
for i in $(seq 16); do
    grep -q '^data: \[DONE\]' "$TMP/z.s$i.out" || cut=$((cut + 1))
done
[ "$cut" -gt 0 ] || fail "no stream was cut without a drain: the check cannot fail"
finish
