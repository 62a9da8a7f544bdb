#!/bin/bash
# tests/browser/dashboard.sh: the dashboard in Debian's Chromium (playwright-core), against a live
# fatiad with its controllers, agent, the walkthrough's fleet and examples (web/tests/dashboard.mjs
# has the checks): login, catalog, a Job launched from it, My workloads (state, plain-words
# pending reason, queue place, logs), the GPU page updating live, queues with borrowing, usage
# (the page's tables against `fatia usage` on the API's records, the CSV download),
# a profile disabled; a tenant of team-a who sees and touches nothing of team-b.
# SHOTS=DIR keeps a screenshot of each page (docs/dashboard/ holds the committed ones).
# Skipped (77) only when Chromium is absent.
. "$(dirname "$0")/lib.bash"
browser_start || { finish; exit 1; }
"$FATIA" token create --data-dir "$TMP/data" --user alice --namespace team-a >"$TMP/alice.kubeconfig" 2>/dev/null ||
    fail "token alice"
$K create -f tests/data/usage/records.yaml -f tests/data/usage/edge.yaml >/dev/null || fail "the usage fixtures"
ALICE=$(awk '$2 == "alice" {print $1; exit}' "$TMP/data/tokens")
# the static files: dot-segments, encoded or not, never leave the dashboard's directory; a link
# planted in it is not followed; the API's own paths still need a token
ln -s "$TMP/data/tokens" "$BUILD/dashboard/assets/planted.js"
for path in /../tokens /assets/../../data/tokens /assets/%2e%2e/%2e%2e/data/tokens /%2e%2e/tokens \
    /assets/planted.js /assets/..%2f..%2ftokens; do
    code=$(curl -s --path-as-is --cacert "$CA" -o "$TMP/body" -w '%{http_code}' "$URL$path")
    [ "$code" = 404 ] || [ "$code" = 400 ] || fail "$path answered $code, want 404 or 400"
    grep -q "$TOKEN" "$TMP/body" && fail "$path served the tokens file"
done
rm -f "$BUILD/dashboard/assets/planted.js"
code=$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "$URL/api/v1/namespaces")
[ "$code" = 401 ] || fail "the API without a token answered $code, want 401"
hdrs=$(curl -s --cacert "$CA" -D - -o /dev/null "$URL/")
grep -qi "^content-security-policy: default-src 'self'" <<<"$hdrs" || fail "/ has no CSP: $hdrs"
grep -qi "^x-content-type-options: nosniff" <<<"$hdrs" || fail "/ has no nosniff"
FATIA=$FATIA TMP_DIR=$TMP NODE_EXTRA_CA_CERTS=$CA node web/tests/dashboard.mjs "$URL" "$TOKEN" "$ALICE" "$TMP/alice.kubeconfig" || fail "browser checks"
stop_fatiad
finish
