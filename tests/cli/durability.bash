# tests/cli/durability.bash: kill -9 fatiad at random points while writers write, then check
# every acknowledged write from another process after a restart. Source after fatiad.bash.
#   crash_test KILLS WRITES THREADS   (CRASH_FATIAD_ARGS: more fatiad options, e.g. --sync normal)
acks_now() {
    local n
    n=$(grep -c '^ACK' "$TMP/acks" 2>/dev/null)
    echo "${n:-0}"
}

crash_test() {
    local kills_want=$1 writes_want=$2 threads=$3
    local dir=$TMP/crash port kills=0 acks=0 wpid
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    start_fatiad "$dir" --listen "127.0.0.1:$port" ${CRASH_FATIAD_ARGS:-} || return 1
    python3 tests/cli/durability.py write "$URL" "$CA" "$TOKEN" "$TMP/acks" "$threads" \
        "$TMP/stop" >"$TMP/writer.out" 2>&1 &
    wpid=$!
    local step=$((writes_want / kills_want)) next
    while [ "$kills" -lt "$kills_want" ] || [ "$acks" -lt "$writes_want" ]; do
        # a random point: after 1/2 to 3/2 of this run's share of the writes, so that the kills
        # spread over all of them
        next=$((acks + step / 2 + RANDOM % (step + 1)))
        while [ "$(acks_now)" -lt "$next" ]; do
            sleep 0.0$((1 + RANDOM % 5))
            kill -0 "$wpid" 2>/dev/null || break
        done
        kill -9 "$FATIAD_PID"
        wait "$FATIAD_PID" 2>/dev/null
        FATIAD_PID=
        kills=$((kills + 1))
        start_fatiad "$dir" --listen "127.0.0.1:$port" ${CRASH_FATIAD_ARGS:-} || return 1
        acks=$(acks_now)
        if ! kill -0 "$wpid" 2>/dev/null; then
            fail "the writer died"
            cat "$TMP/writer.out" >&2
            return 1
        fi
    done
    touch "$TMP/stop"
    wait "$wpid"
    stop_fatiad
    # the store is sound as SQLite sees it (another process, no fatiad running)
    if [ "${FATIA_TEST_STORE:-sqlite}" = sqlite ] && command -v sqlite3 >/dev/null; then
        [ "$(sqlite3 "$dir/store.db" 'PRAGMA integrity_check')" = ok ] ||
            fail "sqlite integrity_check failed"
    fi
    start_fatiad "$dir" --listen "127.0.0.1:$port" ${CRASH_FATIAD_ARGS:-} || return 1
    python3 tests/cli/durability.py check "$URL" "$CA" "$TOKEN" "$TMP/acks" >"$TMP/check.out" 2>&1 ||
        fail "the checker found lost or wrong writes"
    cat "$TMP/check.out"
    echo "crash test: $kills kills of fatiad during $(grep -c '^ACK' "$TMP/acks") acknowledged writes"
    stop_fatiad
}
