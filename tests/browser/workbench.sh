#!/bin/bash
# tests/browser/workbench.sh: a workbench launched from the dashboard's catalog by a tenant, opened
# through the workbench proxy in Chromium: Jupyter (Debian's jupyter-server) answers; the
# notebook's origin reads neither the token nor the cookie; Stop frees the slice
# (web/tests/workbench.mjs). The workbench runs in a runc container of fatia.dev/workbench:1
# (scripts/images/load-examples), fatiad's default runtime as `make run` starts it. Skipped when
# Chromium, jupyter-server or runc is absent, or not root.
. "$(dirname "$0")/lib.bash"
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
[ "$(id -u)" = 0 ] || skip "needs root: the workbench runs under its namespace's uid"
command -v runc >/dev/null || skip "runc not found (scripts/setup installs it)"
export HOME=$TMP/home
mkdir -p "$HOME"
scripts/images/load-examples "$TMP/data" "$BUILD/bin/fatia" >"$TMP/images.log" 2>&1 ||
    fail "load-examples: $(cat "$TMP/images.log")"
# pods outlive fatiad: their containers go with the test
trap 'for c in $(runc --root "$TMP/data/agent/runc" list -q 2>/dev/null); do runc --root "$TMP/data/agent/runc" delete --force "$c"; done
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi
      grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
      etcd_cleanup; rm -rf "$TMP"' EXIT
export FATIAD_RUNTIME=auto
browser_start || { finish; exit 1; }
grep -q "pods run in OCI containers" "$TMP/data.log" ||
    fail "the default runtime is not containers: $(grep agent: "$TMP/data.log" | head -3)"
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >/dev/null 2>&1 || fail "token bob"
BOB=$(awk '$2 == "bob" {print $1; exit}' "$TMP/data/tokens")
NODE_EXTRA_CA_CERTS=$CA node web/tests/workbench.mjs "$URL" "$BOB" || {
    fail "browser checks"
    $K get notebooks,pods -n team-b -o wide >&2
    $K logs mylab-0 -n team-b --tail 20 >&2
}
stop_fatiad
finish
