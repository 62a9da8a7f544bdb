#!/bin/bash
# tests/cli/apiserver-portforward.sh: `kubectl port-forward` against a real fatiad whose node
# agent runs a pod as processes, with kubectl 1.27 (SPDY/3.1) and 1.33 (SPDY tunnelled in a
# WebSocket, SPDY/3.1+portforward.k8s.io):
#   - a real TCP round trip: 1 MiB to an echo server in the pod and back, with a half-close,
#     two connections on one forward (tests/cli/pf_roundtrip.py);
#   - a hostile tenant: a port the pod does not listen on (fatiad's own) is refused with the
#     reason, and another namespace's token is Forbidden.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
HERE=$(dirname "$0")
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

chmod 711 "$TMP" # pods run under their namespace's uid: their working directory is under it
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
PORT=$(free_port)
FATIAD_PORT=${URL##*:}
cat >"$TMP/pod.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: fwd}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Pod
metadata: {name: echo, namespace: fwd}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: python
    command:
    - /usr/bin/python3
    - -c
    - |
      import socket, threading
      srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      srv.bind(("127.0.0.1", $PORT)); srv.listen(16)
      def serve(c):
          while True:
              b = c.recv(65536)
              if not b:
                  break
              c.sendall(b)
          c.close()
      while True:
          threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
YAML
expect_rc 0 kubectl --kubeconfig "$KCFG" apply -f "$TMP/pod.yaml"
for _ in $(seq 100); do
    ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PORT " && break
    sleep 0.1
done

PFPID=
trap 'if [ -n "$PFPID" ]; then kill "$PFPID" 2>/dev/null; fi; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    LOCAL=$(free_port)
    "$k" port-forward -n fwd pod/echo "$LOCAL:$PORT" >"$TMP/pf-$v.log" 2>&1 &
    PFPID=$!
    python3 "$HERE/pf_roundtrip.py" "$LOCAL" 1048576 >"$TMP/rt" 2>&1 || fail "kubectl $v: $(cat "$TMP/rt")"
    python3 "$HERE/pf_roundtrip.py" "$LOCAL" 1000 >"$TMP/rt" 2>&1 || fail "kubectl $v, a second connection: $(cat "$TMP/rt")"
    kill "$PFPID"
    wait "$PFPID" 2>/dev/null
    PFPID=

    # a port the pod does not listen on: fatiad's own
    LOCAL=$(free_port)
    "$k" port-forward -n fwd pod/echo "$LOCAL:$FATIAD_PORT" >"$TMP/pf-bad-$v.log" 2>&1 &
    PFPID=$!
    for _ in $(seq 50); do grep -q Forwarding "$TMP/pf-bad-$v.log" && break; sleep 0.1; done
    curl -sk -m 5 "https://127.0.0.1:$LOCAL/version" >"$TMP/leak" 2>/dev/null
    grep -q gitVersion "$TMP/leak" && fail "kubectl $v: fatiad's port was reached through the pod"
    for _ in $(seq 50); do grep -q "does not listen on port $FATIAD_PORT" "$TMP/pf-bad-$v.log" && break; sleep 0.1; done
    grep -q "does not listen on port $FATIAD_PORT" "$TMP/pf-bad-$v.log" ||
        fail "kubectl $v: no reason for the refused port: $(cat "$TMP/pf-bad-$v.log")"
    kill "$PFPID" 2>/dev/null
    wait "$PFPID" 2>/dev/null
    PFPID=
done

expect_rc 0 "$FATIA" token create --data-dir "$TMP/data" --user mallory --namespace other
cp "$TMP/out" "$TMP/mallory.kubeconfig"
sleep 1.2 # fatiad re-reads the tokens file within a second
for v in 1.27 1.33; do
    expect_rc 1 timeout 20 "$KUBECTL_DIR/kubectl.$v" --kubeconfig "$TMP/mallory.kubeconfig" \
        port-forward -n fwd pod/echo "$(free_port):$PORT"
    grep -qi forbidden "$TMP/err" || fail "kubectl $v, another namespace's token: $(cat "$TMP/err")"
done

stop_fatiad
finish
