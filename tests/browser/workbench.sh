#!/bin/bash
# tests/browser/workbench.sh: a workbench launched from the dashboard's catalog by a tenant, opened
# through the workbench proxy in Chromium: Jupyter (Debian's jupyter-server) answers; the
# notebook's origin reads neither the token nor the cookie; Stop frees the slice
# (web/tests/workbench.mjs). Skipped when Chromium or jupyter-server is absent, or not root
# (the workbench runs under its namespace's uid, as in tests/e2e/nbproxy.sh).
. "$(dirname "$0")/lib.bash"
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
[ "$(id -u)" = 0 ] || skip "needs root: the workbench runs under its namespace's uid"
export HOME=$TMP/home
mkdir -p "$HOME"
browser_start || { finish; exit 1; }
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >/dev/null 2>&1 || fail "token bob"
BOB=$(awk '$2 == "bob" {print $1; exit}' "$TMP/data/tokens")
NODE_EXTRA_CA_CERTS=$CA node web/tests/workbench.mjs "$URL" "$BOB" || {
    fail "browser checks"
    $K get notebooks,pods -n team-b -o wide >&2
    $K logs mylab-0 -n team-b --tail 20 >&2
}
stop_fatiad
finish
