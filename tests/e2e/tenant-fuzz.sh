#!/bin/bash
# tests/e2e/tenant-fuzz.sh: random writes from a tenant identity against a real fatiad with its
# controllers (tests/e2e/tenantfuzz.py: creates, patches of every type, status writes, deletes,
# reserved fields, gates, nodeName, suspend, queue labels; the admin finishes pods as the node
# agent would), with the quota invariant checked after every step. Seed: $FUZZ_SEED (default: a
# fixed one, so CI is reproducible); bounded to 90 s of steps.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1

e2e_start $NO_AGENT || { finish; exit 1; }
"$BUILD/bin/fatia" token create --data-dir "$TMP/data" --user fuzzer --namespace team-a \
    >/dev/null 2>&1 || fail "fatia token create"
TT=$(awk '$2 == "fuzzer" {print $1}' "$TMP/data/tokens")
python3 "$E2E_DIR/tenantfuzz.py" --url "$URL" --ca "$CA" --token "$TOKEN" --tenant-token "$TT" \
    --fuzz --seed "${FUZZ_SEED:-15}" --steps "${FUZZ_STEPS:-1500}" --seconds 90 >"$TMP/fuzz.out" 2>&1 ||
    fail "the tenant fuzzer broke the invariant: $(cat "$TMP/fuzz.out")"
cat "$TMP/fuzz.out"
kill -0 "$FATIAD_PID" || fail "fatiad died under the fuzzer"
stop_fatiad
finish
