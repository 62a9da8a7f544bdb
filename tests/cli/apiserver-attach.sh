#!/bin/bash
# tests/cli/apiserver-attach.sh: `kubectl attach` against a real fatiad whose node agent runs
# pods as processes, with kubectl 1.27 (SPDY/3.1), 1.33 (WebSocket) and 1.33 forced onto SPDY:
#   - without -i: the running container's stdout and stderr from now on, apart;
#   - -i (and -it: kubectl drops -t, the container has no TTY) into a container with
#     stdin: true, stdinOnce: true: lines in, answers out, the end of input closes its stdin,
#     the container ends and so does the attach; an output-only attach before it leaves its
#     stdin open;
#   - two attaches at once both see the output; one that stops reading does not stall the pod;
#   - a hostile tenant: another namespace's token and a read-only token refused; a missing pod,
#     a wrong container; -t to the server directly refused (the container has no TTY).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
K33="$KUBECTL_DIR/kubectl.1.33"
K27="$KUBECTL_DIR/kubectl.1.27"

chmod 711 "$TMP"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
{
    cat <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: att}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Pod
metadata: {name: talker, namespace: att}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'i=0; while :; do echo "tick $i"; echo "err $i" >&2; i=$((i+1)); sleep 0.1; done']
---
apiVersion: v1
kind: Pod
metadata: {name: flood, namespace: att}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'i=0; while :; do i=$((i+1)); echo "line $i $(head -c 60000 /dev/zero | tr "\\0" x)"; sleep 0.01; done']
YAML
    for m in 27 33 33spdy; do
        cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: reader-$m, namespace: att}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    stdin: true
    stdinOnce: true
    command: [sh, -c, 'while read l; do echo "got \$l"; done; echo stdin-closed; exit 0']
YAML
    done
} >"$TMP/pods.yaml"
expect_rc 0 "$K33" apply -f "$TMP/pods.yaml"
for p in talker flood reader-27 reader-33 reader-33spdy; do
    for _ in $(seq 100); do
        "$K33" get pod $p -n att -o jsonpath='{.status.phase}' 2>/dev/null | grep -q Running && break
        sleep 0.2
    done
    "$K33" get pod $p -n att -o jsonpath='{.status.phase}' | grep -q Running ||
        fail "pod $p does not run: $("$K33" get pod $p -n att -o yaml)"
done

for mode in 27 33 33spdy; do
    k=$K33
    [ $mode = 27 ] && k=$K27
    [ $mode = 33spdy ] && export KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
    # output only: stdout and stderr apart, from now on
    timeout 3 "$k" attach talker -n att >"$TMP/o" 2>"$TMP/e"
    grep -q '^tick [0-9]*$' "$TMP/o" || fail "kubectl $mode attach: stdout: $(head -c 300 "$TMP/o") / $(head -c 300 "$TMP/e")"
    grep -q '^err [0-9]*$' "$TMP/e" || fail "kubectl $mode attach: stderr: $(head -c 300 "$TMP/e")"
    grep -q '^err' "$TMP/o" && fail "kubectl $mode attach: stderr on stdout"
    first=$(sed -n 's/^tick //p' "$TMP/o" | head -1)
    [ "${first:-0}" -gt 5 ] || fail "kubectl $mode attach: output from before the attach (tick $first)"
    # an output-only attach to it first: it must not close its stdin (stdinOnce is for input)
    timeout 2 "$k" attach reader-$mode -n att >/dev/null 2>&1
    sleep 1
    "$K33" get pod reader-$mode -n att -o jsonpath='{.status.phase}' | grep -q Running ||
        fail "kubectl $mode: an output-only attach closed a stdinOnce container's stdin"
    # -i: lines in, answers out; the end of input closes stdin (stdinOnce), the container ends
    printf 'one\ntwo\n' | timeout 20 "$k" attach -i reader-$mode -n att >"$TMP/o" 2>"$TMP/e"
    rc=$?
    [ $rc = 0 ] || fail "kubectl $mode attach -i: exit $rc: $(cat "$TMP/e")"
    grep -q '^got one$' "$TMP/o" && grep -q '^got two$' "$TMP/o" ||
        fail "kubectl $mode attach -i: $(cat "$TMP/o") / $(cat "$TMP/e")"
    for _ in $(seq 50); do
        "$K33" get pod reader-$mode -n att -o jsonpath='{.status.phase}' | grep -q Succeeded && break
        sleep 0.1
    done
    "$K33" get pod reader-$mode -n att -o jsonpath='{.status.phase}' | grep -q Succeeded ||
        fail "kubectl $mode attach -i: the container did not end with its stdin"
    "$K33" logs reader-$mode -n att | grep -q '^stdin-closed$' || fail "kubectl $mode: reader's log"
    unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS
done

# two attaches at once; one that stops reading (SIGSTOP) does not stall the pod, whose output
# (about 6 MB/s) soon fills every buffer between it and the stopped client
timeout 4 "$K33" attach flood -n att >"$TMP/a1" 2>/dev/null &
a1=$!
"$K33" attach flood -n att >/dev/null 2>&1 &
a2=$!
sleep 0.5
kill -STOP $a2
sleep 3
wait $a1
n1=$(grep -c '^line' "$TMP/a1")
[ "$n1" -gt 50 ] || fail "an attach beside a stopped one got $n1 lines"
last() { "$K33" logs flood -n att --tail=1 | cut -c1-16; }
before=$(last)
sleep 1
[ "$(last)" != "$before" ] || fail "the pod stalled behind a stopped attach (last line $before)"
kill -KILL $a2 2>/dev/null
wait $a2 2>/dev/null
expect_rc 0 "$K33" delete pod flood -n att --wait=false

# hostile tenants, wrong targets
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace other
cp "$TMP/out" "$TMP/mallory.kubeconfig"
expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user ro --namespace att --read-only
cp "$TMP/out" "$TMP/ro.kubeconfig"
sleep 1.2
for k in "$K27" "$K33"; do
    expect_rc 1 timeout 10 "$k" --kubeconfig "$TMP/mallory.kubeconfig" attach talker -n att
    grep -q 'Forbidden\|forbidden' "$TMP/err" || fail "$k attach, another namespace's token: $(cat "$TMP/err")"
    expect_rc 1 timeout 10 "$k" --kubeconfig "$TMP/ro.kubeconfig" attach talker -n att
    grep -q 'Forbidden\|forbidden' "$TMP/err" || fail "$k attach, a read-only token: $(cat "$TMP/err")"
done
expect_rc 1 "$K33" attach nobody -n att
expect_line "$TMP/err" 'pods "nobody" not found'
expect_rc 1 "$K33" attach talker -n att -c nope
grep -q 'nope' "$TMP/err" || fail "attach -c nope: $(cat "$TMP/err")"
# -t straight to the server (kubectl drops it for a container without a TTY)
api GET '/api/v1/namespaces/att/pods/talker/attach?stdout=true&tty=true' \
    -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io'
[ "$CODE" = 400 ] || fail "attach with tty=true: $CODE"
grep -q 'TTY' "$TMP/body" || fail "attach with tty=true: $(cat "$TMP/body")"

stop_fatiad
finish
