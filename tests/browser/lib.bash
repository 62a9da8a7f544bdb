# tests/browser/lib.bash: what the browser tests share. Source it (it sources tests/cli/lib.bash,
# fatiad.bash and tests/e2e/lib.bash).
#   browser_start [ARGS]  checks Chromium (else skip, 77), node and the built dashboard (else
#                         fail: scripts/dashboard-build), then fatiad with controllers and agent on
#                         the walkthrough fleet and examples/ (e2e_start); URL, TOKEN, CA, K set
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.bash"
. "$(dirname "${BASH_SOURCE[0]}")/../cli/fatiad.bash"
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.bash"

browser_start() {
    [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "Chromium is not installed (scripts/setup installs chromium)"
    command -v node >/dev/null || { fail "node is not installed (scripts/setup)"; return 1; }
    [ -d web/node_modules/playwright-core ] || { fail "web/node_modules lacks playwright-core: run scripts/dashboard-build"; return 1; }
    [ -f "$BUILD/dashboard/index.html" ] || { fail "$BUILD/dashboard is not built (cmake --build $BUILD --target dashboard)"; return 1; }
    find_kubectl
    export FATIAD_CONTROLLERS=1
    # pods run under their namespace's uid: they must reach $TMP
    chmod 711 "$TMP"
    e2e_start --dashboard "$BUILD/dashboard" "$@"
}
