#!/bin/bash
# tests/e2e/kernelstate.sh: the culler's race (docs/selfservice.md, "Kernel state"), on Debian's
# jupyter-server without fatiad: a kernel_info_request on the control channel while a cell runs
# (time.sleep) must leave /api/kernels at busy until the cell ends, then idle.
#   - with jupyter-server's own kernel manager the race is reproduced: it reports idle while the
#     cell still runs (the defect; if this stops being so, the test says so and the workaround can
#     go);
#   - with share/jupyter/fatia_kernels.py (--ServerApp.kernel_manager_class) only busy, then idle.
# Skipped when Debian's jupyter-server or python3-websocket is missing.
. "$(dirname "$0")/../cli/lib.bash"
PY=/usr/bin/python3
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
$PY -c 'import websocket, ipykernel' 2>/dev/null || skip "python3-websocket or python3-ipykernel missing"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export HOME=$TMP/home JUPYTER_RUNTIME_DIR=$TMP/rt
mkdir -p "$HOME"
cd "$HOME" || exit 1

# states MANAGER-ARGS...: prints kernelstate.py's line for a server with those arguments
states() {
    rm -f "$TMP/j.sock"
    PYTHONPATH=$SRC/share/jupyter /usr/bin/jupyter-server --allow-root --sock="$TMP/j.sock" \
        --ServerApp.token= --ServerApp.password= --ServerApp.disable_check_xsrf=True \
        --transport=ipc --KernelManager.ip=kernel-ipc --ServerApp.open_browser=False "$@" \
        >>"$TMP/server.log" 2>&1 &
    local pid=$! i
    for i in $(seq 100); do [ -S "$TMP/j.sock" ] && break; sleep 0.1; done
    timeout 90 $PY "$SRC/tests/e2e/kernelstate.py" "$TMP/j.sock" || echo "driver failed"
    kill "$pid"
    wait "$pid" 2>/dev/null
}

stock=$(states)
echo "jupyter-server's manager: $stock"
case $stock in
*idle*after:\ idle) ;;
*) fail "the race was not reproduced with jupyter-server's own manager: '$stock'" ;;
esac
fixed=$(states --ServerApp.kernel_manager_class=fatia_kernels.FatiaKernelManager)
echo "fatia_kernels.FatiaKernelManager: $fixed"
[ "$fixed" = "busy after: idle" ] || fail "with fatia_kernels, want 'busy after: idle', got '$fixed'"
[ "$FAILS" = 0 ] || tail -30 "$TMP/server.log" >&2
finish
