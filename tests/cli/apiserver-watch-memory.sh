#!/usr/bin/env bash
# tests/cli/apiserver-watch-memory.sh: slow watchers cost bounded memory that comes back (issue
# 15, "Memory is bounded and returned"): 50 watchers that never read, six writes of a 1.4 MB
# object (the largest the 1.5 MiB object limit lets through; about 420 MB of unsent stream bytes,
# past the 256 MiB watch budget: the watchers
# furthest behind are dropped); RSS during stays within the budget (plus slack), and RSS after the
# watchers close is at most RSS before plus 64 MiB (apiserver_watch_memory.py). Before the shared
# event buffers and the trim, RSS stayed at 240 MB after they closed.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
D=$TMP/d
start_fatiad "$D" --no-agent || exit 1
python3 "$(dirname "$0")/apiserver_watch_memory.py" "$URL" "$TOKEN" "$CA" "$FATIAD_PID" 50 6 ||
    fail "watch memory bounds (above)"
n=$(grep -c "a slow stream is dropped" "$D.log")
echo "watchers dropped for the budget: $n"
[ "$n" -gt 0 ] || fail "no watcher was dropped with 420 MB of unsent bytes (budget 256 MiB)"
stop_fatiad
finish
