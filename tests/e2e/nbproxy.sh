#!/bin/bash
# tests/e2e/nbproxy.sh: a real Jupyter (Debian's jupyter-server) in a workbench, reached through
# fatiad's workbench proxy (its own port, a session cookie per notebook), with the real kubectl:
#   - team-b's tenant logs in with its token: an HttpOnly, Secure, SameSite=Strict cookie scoped to
#     the notebook, not the token; /api/status through the proxy; a kernel started over HTTP runs
#     print(6*7) over the proxy's WebSocket;
#   - refusals: no cookie (303 to the login), a cookie of another notebook, a read-only token, a
#     tenant of another namespace, an unknown token;
#   - a hostile tenant's "Jupyter" (a server of its own on the socket, logging every header) opened
#     by the admin never receives the admin's token nor the session cookie;
#   - a pod of another namespace cannot connect to the socket, and no workbench process of team-b
#     listens on a TCP port (Jupyter on a unix socket, kernels on ipc);
#   - the bench: the proxy's median added latency on loopback (median of 5 runs of 200 requests),
#     printed and held under 1 ms.
# Skipped when kubectl, Debian's jupyter-server or python3-websocket is missing.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
PY=/usr/bin/python3
[ -x /usr/bin/jupyter-server ] || skip "Debian's jupyter-server is not installed (scripts/setup)"
$PY -c 'import websocket, ipykernel' 2>/dev/null || skip "python3-websocket or python3-ipykernel missing"
[ "$(id -u)" = 0 ] || skip "needs root: the workbench runs under its namespace's uid"
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
NB="$PY $E2E_DIR/nbproxy.py"

e2e_start || { finish; exit 1; }
PROXY=$(grep -o 'serving workbenches at https://127.0.0.1:[0-9]*' "$TMP/data.log" | grep -o 'https://.*')
[ -n "$PROXY" ] || { fail "fatiad announced no workbench proxy"; finish; exit 1; }
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >"$TMP/bob.kubeconfig" 2>/dev/null || fail "token bob"
"$FATIA" token create --data-dir "$TMP/data" --user ro --namespace team-b --read-only >"$TMP/ro.kubeconfig" 2>/dev/null || fail "token ro"
"$FATIA" token create --data-dir "$TMP/data" --user alice --namespace team-a >"$TMP/alice.kubeconfig" 2>/dev/null || fail "token alice"
tok() { awk -v u="$1" '$2 == u {print $1; exit}' "$TMP/data/tokens"; }
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/bob.kubeconfig -n team-b"

# notebook NAME COMMAND: a GPU-less workbench of team-b whose container runs COMMAND (sh -c)
notebook() {
    cat >"$TMP/$1.yaml" <<YAML
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: $1, namespace: team-b}
spec:
  template:
    spec:
      containers:
      - name: $1
        image: fatia.dev/workbench:1
        command: [sh, -c, '$2']
YAML
    $T create -f "$TMP/$1.yaml" >/dev/null || fail "create notebook $1"
}
JUPYTER='exec /usr/bin/jupyter-server --sock="$HOME/.fatia-jupyter.sock" --ServerApp.base_url="$NB_PREFIX" --ServerApp.token= --ServerApp.password= --ServerApp.disable_check_xsrf=True --transport=ipc --KernelManager.ip=kernel-ipc --ServerApp.open_browser=False'
# the README's workbench, in the process mode: the image's command given (Jupyter on the socket)
{ cat examples/workbench/lab.yaml; echo "        command: [sh, -c, '$JUPYTER']"; } >"$TMP/lab.yaml"
$T create -f "$TMP/lab.yaml" >/dev/null || fail "create examples/workbench/lab.yaml" 
# the hostile tenant's own server on the socket: every request head it gets, to a file
cat >"$TMP/spy.py" <<'PY'
import os, socketserver, http.server
p = os.environ["HOME"] + "/.fatia-jupyter.sock"
if os.path.exists(p):
    os.unlink(p)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(os.environ["HOME"] + "/heads.log", "a") as f:
            f.write(self.requestline + "\n" + str(self.headers))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def address_string(self):
        return "-"
socketserver.UnixStreamServer(p, H).serve_forever()
PY
chmod 644 "$TMP/spy.py"
SPY="exec /usr/bin/python3 $TMP/spy.py"
notebook spy "$SPY"
sock=$TMP/data/agent/homes/team-b/lab/.fatia-jupyter.sock
wait_until 60 test -S "$sock" || { $K logs lab-0 -n team-b >&2; }

# --- the tenant's own workbench ---
cookie=$($NB login "$PROXY" "$CA" team-b lab "$(tok bob)") || fail "bob cannot log in to his workbench"
$NB get "$PROXY" "$CA" /notebook/team-b/lab/api/status "$cookie" >"$TMP/out"
expect_line "$TMP/out" '200 {'
expect_line "$TMP/out" '"last_activity":'
$NB kernel "$PROXY" "$CA" team-b lab "$cookie" >"$TMP/out" 2>&1 || fail "kernel: $(cat "$TMP/out")"
expect_line "$TMP/out" "stream: 42"

# --- refusals ---
$NB get "$PROXY" "$CA" /notebook/team-b/lab/api/status - >"$TMP/out"
expect_line "$TMP/out" "303 "
$NB get "$PROXY" "$CA" /notebook/team-b/spy/api/status "$cookie" >"$TMP/out"
expect_line "$TMP/out" "303 " # lab's cookie does not open spy
$NB login "$PROXY" "$CA" team-b lab "$(tok ro)" >"$TMP/out" 2>&1 && fail "a read-only token opened a workbench"
expect_line "$TMP/out" "status 403"
$NB login "$PROXY" "$CA" team-b lab "$(tok alice)" >"$TMP/out" 2>&1 && fail "team-a's tenant opened team-b's workbench"
expect_line "$TMP/out" "status 403"
$NB login "$PROXY" "$CA" team-b lab "0123456789abcdef" >"$TMP/out" 2>&1 && fail "an unknown token opened a workbench"
expect_line "$TMP/out" "status 401"

# --- the admin opens the hostile tenant's workbench ---
wait_until 60 test -S "$TMP/data/agent/homes/team-b/spy/.fatia-jupyter.sock" || $K logs spy-0 -n team-b >&2
acookie=$($NB login "$PROXY" "$CA" team-b spy "$TOKEN") || fail "the admin cannot open spy"
$NB get "$PROXY" "$CA" /notebook/team-b/spy/tree "$acookie" >"$TMP/out"
expect_line "$TMP/out" "200 ok"
heads=$TMP/data/agent/homes/team-b/spy/heads.log
expect_line "$heads" "GET /notebook/team-b/spy/tree"
expect_line "$heads" "Cookie: other=1"
grep -qF "$TOKEN" "$heads" && fail "the tenant's server received the admin's token"
grep -qF "$acookie" "$heads" && fail "the tenant's server received the admin's session cookie"
grep -qi "^authorization" "$heads" && fail "the tenant's server received an Authorization header"

# --- another namespace cannot reach it ---
uid_b=$(stat -c %u "$TMP/data/agent/homes/team-b")
cat >"$TMP/probe.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: team-a}
spec:
  restartPolicy: Never
  containers:
  - name: probe
    image: x
    command: [/usr/bin/python3, -c, "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$sock')"]
YAML
$K create -f "$TMP/probe.yaml" >/dev/null || fail "create probe"
probe_done() { [ "$(jp pod probe -n team-a -o jsonpath='{.status.phase}')" = Failed ]; }
wait_until 30 probe_done
$K logs probe -n team-a >"$TMP/out" 2>&1
expect_line "$TMP/out" "PermissionError"
# no process of team-b's workbenches listens on TCP, but for ipykernel's IOPub pipe from forked
# subprocesses (hard-coded on 127.0.0.1 by ipykernel 6: a PULL socket, so a peer can only push,
# and what it pushes is dropped without the pipe's random 16-byte id; gone with a network
# namespace, docs/selfservice.md)
# (uids are per fatiad: other fatiads' pods may share team-b's; ours have their HOME in $TMP/data)
ss -H -ltnpe | grep "uid:$uid_b " >"$TMP/ss"
while read -r line; do
    pid=$(echo "$line" | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q "^HOME=$TMP/data/" || continue
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ipykernel_launcher ||
        fail "a process of team-b listens on TCP: $line ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null))"
done <"$TMP/ss"

# --- the bench ---
$NB bench "$PROXY" "$CA" team-b lab "$cookie" "$sock" >"$TMP/bench" || fail "bench"
cat "$TMP/bench"
added=$(sed -n 's/^median added latency: \([0-9.-]*\) ms/\1/p' "$TMP/bench")
awk -v a="$added" 'BEGIN {exit !(a != "" && a < 1.0)}' || fail "the proxy adds $added ms (want < 1 ms)"

# --- stop: the workbench's processes end, kernels included ---
$T annotate notebook lab kubeflow-resource-stopped=now >/dev/null || fail "stop lab"
lab_gone() { [ -z "$(jp pod lab-0 -n team-b -o name)" ]; }
wait_until 60 lab_gone
kernels_gone() { ! pgrep -f "$TMP/data/agent/homes/team-b/lab/.local/share/jupyter/runtime/kernel" >/dev/null; }
wait_until 10 kernels_gone || fail "the kernel outlived its stopped workbench: $(pgrep -af "$TMP/data/agent/homes/team-b/lab/")"
$T delete notebooks --all >/dev/null || fail "delete notebooks"
$K delete pod probe -n team-a >/dev/null
nb_pods_gone() { [ -z "$(jp pods -n team-b -l notebook-name -o name)" ]; }
wait_until 60 nb_pods_gone
stop_fatiad
finish
