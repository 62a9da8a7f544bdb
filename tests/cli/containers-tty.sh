#!/usr/bin/env bash
# tests/cli/containers-tty.sh: terminals inside OCI containers (runc), and port-forward into
# them, with kubectl 1.27 (SPDY) and 1.33 (WebSocket, and forced onto SPDY):
#   - `kubectl exec -it POD -- sh` into a runc container (tests/cli/exec_tty.py drives a real
#     pty): the shell sees a terminal of the container's devpts, of the client's size (resize),
#     its input echoed, and its exit code comes back as kubectl's;
#   - a resize in the middle of the session reaches the container's terminal;
#   - a client killed in the middle: its process in the container ends (SIGHUP);
#   - output keeps flowing while the program reads none of the input pasted meanwhile;
#   - `kubectl attach -it` to a container with tty: true and stdin: true, in both runtimes (runc:
#     the pty from runc create's console socket, held by the shim; process: openpty): the
#     shell answers on its terminal, of the client's size, then the new one after a resize; a
#     client that leaves does not end the container; the shell's exit ends the last attach;
#   - port-forward to a port of the container's own network namespace (1 MiB echoed, half-close);
#     fatiad's own port through the pod refused;
#   - attach -i without a terminal into a runc container (stdin: true, stdinOnce: true);
#   - exec without a terminal still gives stdin, stdout, stderr apart and the exit code;
#   - a hostile tenant: another namespace's token cannot exec -it into the pod.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$(dirname "$0")
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox python3
agent_setup
export HOME=$TMP/home
mkdir -p "$HOME"
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

D=$TMP/d
T0=$(date +%s)
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
start_fatiad "$D" --no-controllers --agent runtime=oci || exit 1
IMG=fatia.dev/busybox:1
k create namespace other >/dev/null || fail "create namespace other"

bound_pod box "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sh", "-c", "hostname > /tmp/h; exec sleep 3600"]
EOF2
for rt in oci process; do
    extra="  restartPolicy: Never"
    [ $rt = process ] && extra="$extra
  runtimeClassName: fatia-process"
    bound_pod "term-$rt" "" "$extra" <<EOF2
  - name: main
    image: $IMG
    command: ["sh"]
    stdin: true
    tty: true
EOF2
done
bound_pod echo "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["nc", "-ll", "-p", "8080", "-e", "cat"]
EOF2
for v in 127 133; do
    bound_pod "talk-$v" "" "  restartPolicy: Never" <<EOF2
  - name: main
    image: $IMG
    command: ["sh", "-c", "read x; echo \"got \$x\"; echo to-err >&2"]
    stdin: true
    stdinOnce: true
EOF2
done
wait_for 60 phase_is box Running
wait_for 60 phase_is term-oci Running
wait_for 60 phase_is term-process Running

for mode in 1.27 1.33 1.33-spdy; do
    kc="$KUBECTL_DIR/kubectl.${mode%-spdy}"
    if [ "$mode" = 1.33-spdy ]; then
        export KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
    else
        unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS
    fi
    # a terminal in the container: its devpts, its size, echo, the exit code
    python3 "$HERE/exec_tty.py" "$kc" "$KCFG" default box >"$TMP/tty" 2>&1 ||
        fail "kubectl $mode: exec -it into a container: $(cat "$TMP/tty")"
    # inside the container: its hostname, not the host's, and a pty the container's devpts made
    python3 "$HERE/exec_tty.py" --resize "$kc" "$KCFG" default box >"$TMP/tty2" 2>&1 ||
        fail "kubectl $mode: resize during exec -it: $(cat "$TMP/tty2")"
    # attach -it to a container with tty: true, in both runtimes; the last client exits the shell
    for rt in oci process; do
        last=
        [ "$mode" = 1.33-spdy ] && last=--exit
        python3 "$HERE/attach_tty.py" $last "$kc" "$KCFG" default "term-$rt" >"$TMP/att" 2>&1 ||
            fail "kubectl $mode: attach -it to a $rt container with a TTY: $(cat "$TMP/att")"
    done
    # no terminal: stdio apart, the exit code
    echo in | "$kc" --kubeconfig "$KCFG" exec -i box -- sh -c 'cat; echo e >&2; cat /tmp/h; exit 4' \
        >"$TMP/o" 2>"$TMP/e"
    rc=$?
    [ "$rc" = 4 ] || fail "kubectl $mode: exec exit code $rc, want 4"
    [ "$(cat "$TMP/o")" = "in
box" ] || fail "kubectl $mode: exec stdout: $(cat "$TMP/o")"
    grep -q '^e$' "$TMP/e" || fail "kubectl $mode: exec stderr: $(cat "$TMP/e")"
done
unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS

# port-forward into a container's own network namespace (its loopback, as kubelet's), both
# versions: 1 MiB echoed with a half-close; a port the pod does not listen on (fatiad's) refused
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for 60 phase_is echo Running
for v in 1.27 1.33; do
    LOCAL=$(free_port)
    "$KUBECTL_DIR/kubectl.$v" --kubeconfig "$KCFG" port-forward pod/echo "$LOCAL:8080" >"$TMP/pf.log" 2>&1 &
    PFPID=$!
    python3 "$HERE/pf_roundtrip.py" "$LOCAL" 1048576 >"$TMP/rt" 2>&1 ||
        fail "kubectl $v: port-forward into a container: $(cat "$TMP/rt") $(cat "$TMP/pf.log")"
    kill "$PFPID"
    wait "$PFPID" 2>/dev/null
    FPORT=${URL##*:}
    LOCAL=$(free_port)
    "$KUBECTL_DIR/kubectl.$v" --kubeconfig "$KCFG" port-forward pod/echo "$LOCAL:$FPORT" >"$TMP/pf.log" 2>&1 &
    PFPID=$!
    for _ in $(seq 50); do grep -q Forwarding "$TMP/pf.log" && break; sleep 0.1; done
    curl -sk -m 5 "https://127.0.0.1:$LOCAL/version" >"$TMP/leak" 2>/dev/null
    grep -q gitVersion "$TMP/leak" && fail "kubectl $v: fatiad's port was reached through a container"
    for _ in $(seq 50); do grep -q "does not listen on port $FPORT" "$TMP/pf.log" && break; sleep 0.1; done
    grep -q "does not listen on port $FPORT" "$TMP/pf.log" ||
        fail "kubectl $v: no reason for the refused port $FPORT: $(cat "$TMP/pf.log")"
    kill "$PFPID" 2>/dev/null
    wait "$PFPID" 2>/dev/null
done

# attach -i (no terminal) into a runc container: its stdin pipe, its stdout and stderr apart
for v in 127 133; do
    wait_for 60 phase_is "talk-$v" Running
    echo hello | "$KUBECTL_DIR/kubectl.${v:0:1}.${v:1}" --kubeconfig "$KCFG" attach -i "talk-$v" \
        >"$TMP/att.out" 2>"$TMP/att.err"
    grep -qx "got hello" "$TMP/att.out" || fail "kubectl $v: attach -i into a container: $(cat "$TMP/att.out" "$TMP/att.err")"
    grep -q "to-err" "$TMP/att.err" || fail "kubectl $v: attach -i: stderr: $(cat "$TMP/att.err")"
done

# a program that writes a lot and reads none of the input a client pastes meanwhile: its
# output still flows (the relay never blocks on the terminal's input), the session ends
python3 - "$KUBECTL_DIR/kubectl.1.33" "$KCFG" <<'PY' || fail "exec -it: output stalled behind unread input"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--kubeconfig", sys.argv[2], "exec", "-it", "box", "--",
                           "sh", "-c", "stty raw -echo; sleep 2; seq 1 200000; echo all-written"])
out, sent, end = b"", 0, time.time() + 60
while time.time() < end:
    r, w, _ = select.select([fd], [fd] if sent < 256 * 1024 else [], [], 0.1)
    if w:
        sent += os.write(fd, b"y" * 4096)
    if r:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
    if b"all-written" in out:
        break
os.kill(pid, 9)
os.waitpid(pid, 0)
sys.exit(0 if b"200000" in out and b"all-written" in out else "output: %d bytes, %d sent" % (len(out), sent))
PY

# a client that leaves: its terminal's process in the container goes too (SIGHUP from its pty,
# whose master the killed relay held), nothing is left running in the container
python3 - "$KUBECTL_DIR/kubectl.1.33" "$KCFG" <<'PY'
import os, pty, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--kubeconfig", sys.argv[2], "exec", "-it", "box", "--",
                           "sleep", "98765"])
import subprocess
seen = False
for _ in range(50):  # seen from the host: the container's ps cannot read an exec'd process
    time.sleep(0.2)
    seen = subprocess.run(["pgrep", "-f", "^sleep 9876[5]$"], capture_output=True).returncode == 0
    if seen:
        break
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
sys.exit(0 if seen else "the exec -it process never ran in the container")
PY
[ $? = 0 ] || fail "exec -it: the process to leave behind did not run"
gone() { ! pgrep -f '^sleep 9876[5]$' >/dev/null; }
wait_for 20 gone

# a command that does not exist, with a terminal: runc's reason, a failing code
"$KUBECTL_DIR/kubectl.1.33" --kubeconfig "$KCFG" exec -t box -- no-such-command >"$TMP/o" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "exec -t of a missing command succeeded"
grep -q 'no-such-command.*not found' "$TMP/o" || fail "exec -t of a missing command: $(cat "$TMP/o")"
# the relay's console socket and pid file are gone
ls -d /tmp/fatia-tty-* 2>/dev/null | while read -r d; do
    [ "$(stat -c %Y "$d")" -ge "$T0" ] && fail "a console socket directory was left: $d"
done

# the shells exited with the last attach: the pods end
wait_for 30 phase_is term-oci Succeeded
wait_for 30 phase_is term-process Succeeded
# attach -t to a container without a TTY, straight to the server: refused, with the reason
"$KUBECTL_DIR/kubectl.1.33" --kubeconfig "$KCFG" get --raw \
    '/api/v1/namespaces/default/pods/box/attach?stdout=true&tty=true' >"$TMP/o" 2>&1
grep -q 'has no TTY' "$TMP/o" || fail "attach tty=true to a container without one: $(cat "$TMP/o")"

# hostile tenant
expect_rc 0 "$FATIA" token create --data-dir "$D" --user mallory --namespace other
cp "$TMP/out" "$TMP/mallory.kubeconfig"
sleep 1.2 # fatiad re-reads the tokens file within a second
python3 "$HERE/exec_tty.py" "$KUBECTL_DIR/kubectl.1.33" "$TMP/mallory.kubeconfig" default box \
    >"$TMP/tty" 2>&1 && fail "ATTACK SUCCEEDED: another namespace's token got a terminal in the pod"
grep -q 'Forbidden\|forbidden' "$TMP/tty" || fail "another namespace's token: $(cat "$TMP/tty")"
finish
