#!/bin/bash
# tests/cli/apiserver-exec.sh: `kubectl exec` against a real fatiad whose node agent runs a pod
# as processes, with kubectl 1.27 (SPDY/3.1), 1.33 (WebSocket, v5.channel.k8s.io) and 1.33 told
# to use SPDY (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false: its fallback):
#   - stdin in, stdout and stderr apart, the exit code out; 2 MiB of stdin intact;
#   - the process is one of the pod's: its uid, its container's environment, its cgroup;
#   - -it through a real pty (tests/cli/exec_tty.py): a terminal, its size (resize), the code;
#   - kubectl cp both ways (exec of tar);
#   - a command that does not exist: 127 and kubelet's message;
#   - a hostile tenant: another namespace's token, a read-only token, a missing pod: refused;
#     256 MiB of stdin to a process that reads none (both protocols): fatiad's memory grows by
#     less than 64 MiB (it stops reading the client while 1 MiB of input is unsent);
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
HERE=$(dirname "$0")
K33="$KUBECTL_DIR/kubectl.1.33"
K27="$KUBECTL_DIR/kubectl.1.27"

chmod 711 "$TMP" # pods run under their namespace's uid: their working directory is under it
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
cat >"$TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: shell}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Pod
metadata: {name: box, namespace: shell}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    env: [{name: GREETING, value: bonjour}]
    command: [sh, -c, 'echo "uid=$(id -u)"; echo "cg=$(grep ^0:: /proc/self/cgroup)"; exec sleep 3600']
YAML
expect_rc 0 "$K33" apply -f "$TMP/pod.yaml"
for _ in $(seq 100); do
    "$K33" get pod box -n shell -o jsonpath='{.status.phase}' 2>/dev/null | grep -q Running && break
    sleep 0.2
done
"$K33" get pod box -n shell -o jsonpath='{.status.phase}' | grep -q Running ||
    fail "the pod does not run: $("$K33" get pod box -n shell -o yaml)"
for _ in $(seq 50); do
    "$K33" logs box -n shell >"$TMP/log" 2>/dev/null
    grep -q '^cg=' "$TMP/log" && break
    sleep 0.1
done
pod_uid=$(sed -n 's/^uid=//p' "$TMP/log")
pod_cg=$(sed -n 's/^cg=//p' "$TMP/log")

exec_checks() {
    # stdin, stdout, stderr, exit code
    echo "from stdin" | "$k" exec -i box -n shell -- sh -c 'cat; echo to-stderr >&2; exit 3' \
        >"$TMP/o" 2>"$TMP/e"
    rc=$?
    [ "$rc" = 3 ] || fail "kubectl $mode: exec exit code $rc, want 3"
    [ "$(cat "$TMP/o")" = "from stdin" ] || fail "kubectl $mode: exec stdout: $(cat "$TMP/o")"
    grep -q '^to-stderr$' "$TMP/e" || fail "kubectl $mode: exec stderr: $(cat "$TMP/e")"
    grep -q "command terminated with exit code 3" "$TMP/e" || fail "kubectl $mode: kubectl's message: $(cat "$TMP/e")"
    expect_rc 0 "$k" exec box -n shell -- true

    # one of the pod's processes
    expect_rc 0 "$k" exec box -n shell -- sh -c 'echo "$(id -u) $GREETING"; grep ^0:: /proc/self/cgroup'
    [ "$(head -1 "$TMP/out")" = "$pod_uid bonjour" ] ||
        fail "kubectl $mode: exec runs as $(head -1 "$TMP/out"), the pod as $pod_uid with GREETING=bonjour"
    [ "$(sed -n 2p "$TMP/out")" = "$pod_cg" ] ||
        fail "kubectl $mode: exec's cgroup $(sed -n 2p "$TMP/out"), the pod's $pod_cg"

    # a big output through the flow control, intact
    "$k" exec box -n shell -- sh -c 'seq 1 300000' >"$TMP/seq" 2>"$TMP/e" || fail "kubectl $mode: exec seq: $(cat "$TMP/e")"
    [ "$(seq 1 300000 | cksum)" = "$(cksum <"$TMP/seq")" ] || fail "kubectl $mode: 300,000 lines came back altered ($(wc -l <"$TMP/seq"))"

    # 2 MiB of stdin in (SPDY: far past the 64 KiB windows, which fatiad gives back), intact
    [ -f "$TMP/big" ] || head -c 2097152 /dev/urandom >"$TMP/big"
    "$k" exec -i box -n shell -- sh -c 'cksum' <"$TMP/big" >"$TMP/o" 2>"$TMP/e" ||
        fail "kubectl $mode: exec with 2 MiB of stdin: $(cat "$TMP/e")"
    [ "$(cat "$TMP/o")" = "$(cksum <"$TMP/big")" ] ||
        fail "kubectl $mode: 2 MiB of stdin came in altered: $(cat "$TMP/o")"

    # kubectl cp (exec of tar), both ways, a directory of files, into the pod's working directory
    mkdir -p "$TMP/tree/sub"
    seq 1 20000 >"$TMP/tree/numbers"
    printf 'caf\xc3\xa9\n' >"$TMP/tree/sub/utf8"
    ( cd "$TMP" && "$k" cp tree shell/box:"copied-$mode" ) >"$TMP/cp.out" 2>&1 || fail "kubectl $mode: cp in: $(cat "$TMP/cp.out")"
    expect_rc 0 "$k" exec box -n shell -- sh -c 'cd "copied-$0" && cksum numbers sub/utf8' "$mode"
    [ "$(awk '{print $1, $2}' "$TMP/out")" = "$(cd "$TMP/tree" && cksum numbers sub/utf8 | awk '{print $1, $2}')" ] ||
        fail "kubectl $mode: cp in: $(cat "$TMP/out")"
    ( cd "$TMP" && "$k" cp shell/box:"copied-$mode" back ) >"$TMP/cp.out" 2>&1 || fail "kubectl $mode: cp out: $(cat "$TMP/cp.out")"
    diff -r "$TMP/tree" "$TMP/back" >"$TMP/diff" || fail "kubectl $mode: cp out differs: $(cat "$TMP/diff")"

    # a terminal
    python3 "$HERE/exec_tty.py" "$k" "$KCFG" shell box >"$TMP/tty" 2>&1 || fail "kubectl $mode: $(cat "$TMP/tty")"

    # a command that does not exist
    expect_rc 127 "$k" exec box -n shell -- no-such-command
    expect_line "$TMP/err" 'exec: "no-such-command": executable file not found in $PATH'
}

# both versions, and 1.33 forced onto SPDY (as after a failed WebSocket upgrade)
for mode in 1.27 1.33 1.33-spdy; do
    k="$KUBECTL_DIR/kubectl.${mode%-spdy}"
    if [ "$mode" = 1.33-spdy ]; then
        export KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
    else
        unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS
    fi
    rm -rf "$TMP/tree" "$TMP/back"
    exec_checks
done
unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS

# a client flooding the stdin of a process that reads none: fatiad holds at most about 1 MiB of
# it (then stops reading the client), never the flood
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$FATIAD_PID/status"; }
for mode in ws spdy; do
    if [ "$mode" = spdy ]; then export KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false; fi
    r0=$(rss_kb)
    head -c 268435456 /dev/zero | timeout 15 "$K33" exec -i box -n shell -- sleep 6 >/dev/null 2>&1 &
    fl=$!
    peak=$r0
    for _ in $(seq 50); do
        r=$(rss_kb)
        [ "$r" -gt "$peak" ] && peak=$r
        kill -0 "$fl" 2>/dev/null || break
        sleep 0.1
    done
    kill "$fl" 2>/dev/null
    wait "$fl" 2>/dev/null
    unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS
    echo "stdin flood ($mode): fatiad's RSS $((r0 / 1024)) -> $((peak / 1024)) MiB"
    [ $((peak - r0)) -lt 65536 ] ||
        fail "a stdin flood ($mode) grew fatiad by $(((peak - r0) / 1024)) MiB (the unread input held)"
done

# hostile tenants
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace other
cp "$TMP/out" "$TMP/mallory.kubeconfig"
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user reader --namespace shell --read-only
cp "$TMP/out" "$TMP/reader.kubeconfig"
sleep 1.2 # fatiad re-reads the tokens file within a second
expect_rc 1 "$K33" --kubeconfig "$TMP/mallory.kubeconfig" exec box -n shell -- id
grep -q 'Forbidden\|forbidden' "$TMP/err" || fail "another namespace's token: $(cat "$TMP/err")"
expect_rc 1 "$K33" --kubeconfig "$TMP/reader.kubeconfig" exec box -n shell -- id
grep -q 'Forbidden\|forbidden' "$TMP/err" || fail "a read-only token: $(cat "$TMP/err")"
expect_rc 1 "$K33" exec nobody -n shell -- id
expect_line "$TMP/err" 'pods "nobody" not found'
expect_rc 1 "$K33" exec box -n shell -c nope -- id
expect_line "$TMP/err" 'container nope is not valid for pod box'

for k in "$K27" "$K33"; do
    expect_rc 1 "$k" --kubeconfig "$TMP/mallory.kubeconfig" exec -i box -n shell -- id
    grep -q 'Forbidden\|forbidden' "$TMP/err" || fail "$k, another namespace's token: $(cat "$TMP/err")"
done

stop_fatiad
finish
