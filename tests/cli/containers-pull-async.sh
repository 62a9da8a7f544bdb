#!/usr/bin/env bash
# tests/cli/containers-pull-async.sh: a pull does not stop fatiad's API (agent/imgpull.c). A
# registry (Debian's docker-registry) sits behind a proxy that holds every manifest request while
# $TMP/hold exists, so a pod's pull waits as long as the test wants. Meanwhile: the API answers
# every request fast (with the pull on the loop, as before, each waited for the whole pull), the
# pod waits in ContainerCreating with a Pulling event, a pod of a cached image starts at once (it
# does not queue behind the pull), a pod deleted while its pull waits is never started, and a
# SIGTERM ends fatiad at once with a pull still held. Released, the pulled pod runs.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox docker-registry curl
agent_setup
REG_PID= PROXY_PID=
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
    [ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
D=$TMP/d
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

PORT=$(free_port)
cat >"$TMP/registry.yml" <<EOF
version: 0.1
storage: {filesystem: {rootdirectory: $TMP/registry}}
http: {addr: 127.0.0.1:$PORT}
EOF
docker-registry serve "$TMP/registry.yml" >"$TMP/registry.log" 2>&1 &
REG_PID=$!
PPORT=$(free_port)
cat >"$TMP/proxy.py" <<'PY'
# holds GET/HEAD .../manifests/... while the hold file exists (at most 120 s), then forwards
import http.client, http.server, os, sys, time
port, upstream, hold, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    def fwd(self):
        if "/manifests/" in self.path:
            end = time.time() + 120
            if os.path.exists(hold):
                open(log, "a").write("holding %s\n" % self.path)
            while os.path.exists(hold) and time.time() < end:
                time.sleep(0.05)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        hdrs = {}
        for k in set(self.headers.keys()):
            if k.lower() != "host":
                hdrs[k] = ", ".join(self.headers.get_all(k))
        c.request(self.command, self.path, body, hdrs)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = fwd
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
python3 "$TMP/proxy.py" "$PPORT" "$PORT" "$TMP/hold" "$TMP/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$PPORT/v2/" >/dev/null && break
    sleep 0.1
done
curl -fs "http://127.0.0.1:$PPORT/v2/" >/dev/null || { fail "the registry or its proxy did not start: $(cat "$TMP/registry.log")"; finish; }

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
REF=127.0.0.1:$PPORT/fatia/busybox:1
skopeo --insecure-policy copy -q --dest-tls-verify=false "oci-archive:$TMP/busybox.tar" "docker://$REF" ||
    fail "cannot push to the registry"
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/cached:1 "$TMP/busybox.tar"

start_fatiad "$D" --no-controllers --agent runtime=oci --agent "insecure-registries=127.0.0.1:$PPORT" || exit 1

: >"$TMP/hold"
bound_pod slow "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["sh", "-c", "echo pulled"]
EOF
wait_for 30 grep -q "holding" "$TMP/proxy.log"
grep -q "holding" "$TMP/proxy.log" || { fail "the pull never reached the registry"; finish; }

# the API while the pull waits: every request answered, none slow (the loop is free)
worst=0
for i in $(seq 30); do
    t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 --cacert "$CA" \
        -H "Authorization: Bearer $TOKEN" "$URL/api/v1/namespaces/default/pods")
    [ "${t% *}" = 200 ] || fail "GET pods during the pull: $t"
    worst=$(python3 -c "print(max($worst, ${t#* }))")
    sleep 0.05
done
echo "slowest of 30 GETs during the held pull: ${worst}s"
python3 -c "import sys; sys.exit(0 if $worst < 1.0 else 1)" || fail "the API took ${worst}s during a pull"
t0=$(date +%s.%N)
k get pods >/dev/null || fail "kubectl get pods during the pull"
python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $t0 < 3 else 1)" || fail "kubectl get pods was slow during the pull"

[ "$(jp slow .status.phase)" = Pending ] || fail "the pod in a held pull: phase $(jp slow .status.phase)"
[ "$(jp slow '.status.containerStatuses[0].state.waiting.reason')" = ContainerCreating ] ||
    fail "the pod in a held pull: $(jp slow '.status.containerStatuses[0].state')"
wait_for 10 sh -c "$KUBECTL --kubeconfig $KCFG get events --field-selector involvedObject.name=slow | grep -q Pulling"

# a cached image does not queue behind the held pull
bound_pod cached "" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/cached:1
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo cached"]
EOF
wait_for 30 phase_is cached Succeeded
[ "$(k logs cached 2>/dev/null)" = cached ] || fail "the cached pod: $(k logs cached 2>&1)"
[ -f "$TMP/hold" ] || fail "the hold ended early"
[ "$(jp slow .status.phase)" = Pending ] || fail "the held pod ran before the release"

# a pod deleted while its pull waits (queued behind slow) is never started
bound_pod gone "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["sh", "-c", "echo started; sleep 60"]
EOF
gone_uid=$(k get pod gone -o 'jsonpath={.metadata.uid}')
sleep 0.5
k delete pod gone --wait=false >/dev/null || fail "cannot delete gone"
wait_for 20 sh -c "! $KUBECTL --kubeconfig $KCFG get pod gone"

rm -f "$TMP/hold"
wait_for 60 phase_is slow Succeeded
[ "$(k logs slow 2>/dev/null)" = pulled ] || fail "the pulled pod: $(k logs slow 2>&1)"
k get events --field-selector involvedObject.name=slow >"$TMP/ev" 2>&1
grep -q "Pulled" "$TMP/ev" || fail "no Pulled event: $(cat "$TMP/ev")"
sleep 2 # gone's job ends after slow's
[ -d "$D/agent/pods/$gone_uid" ] && fail "the pod deleted during its pull was started"
grep -q "pod default/gone started" "$D.log" && fail "fatiad started the deleted pod"
kill -0 "$FATIAD_PID" || fail "fatiad died"

# SIGTERM with a pull held: fatiad ends at once (the worker is left to finish)
: >"$TMP/hold"
: >"$TMP/proxy.log"
bound_pod last "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["true"]
EOF
wait_for 30 grep -q "holding" "$TMP/proxy.log"
t0=$SECONDS
stop_fatiad
[ $((SECONDS - t0)) -le 10 ] || fail "fatiad took $((SECONDS - t0)) s to stop with a pull held"
rm -f "$TMP/hold"
finish
