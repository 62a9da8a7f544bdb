#!/usr/bin/env bash
# tests/cli/containers-probes.sh: probes run by fatia-shim (src/agent/shim_probe.c, the policy
# src/agent/probe.c), in both runtimes (OCI containers from the busybox image this test builds,
# and the fatia-process RuntimeClass), in a fatiad with its controllers:
#   - readinessProbe exec: containerStatuses[].ready and the pod's Ready / ContainersReady
#     conditions follow the probe both ways, and the Service's Endpoints list the pod only while
#     it is ready (notReadyAddresses otherwise);
#   - readinessProbe httpGet on a named port (busybox httpd): 404 is unready, with kubelet's
#     Unhealthy Event "Readiness probe failed: HTTP probe failed with statuscode: 404"; 200 ready;
#   - livenessProbe exec failing: the container is killed (after the probe's own
#     terminationGracePeriodSeconds, not the pod's) and restarted (restartCount 1,
#     lastState.terminated), Events Unhealthy and Killing; with restartPolicy Never it is not
#     restarted and the pod fails;
#   - livenessProbe tcpSocket: a listening port keeps the container, a closed one restarts it;
#   - startupProbe: started and ready stay false until it succeeds, and liveness does not run
#     before (a failing liveness probe can not kill a container still starting);
#   - an exec probe past timeoutSeconds is a failure ("command timed out");
#   - hostile specs: a probe whose httpHeaders carry CR/LF (request smuggling into the pod's own
#     server), a grpc probe, a named port the container lacks: CreateContainerConfigError naming
#     the field path; nothing runs.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
agent_setup
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
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci --agent restart-backoff=100ms \
    --agent restart-backoff-max=300ms || exit 1
IMG=fatia.dev/busybox:1
cstat() { jp "$1" ".status.containerStatuses[0].$2"; }
cond() { k get pod "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null; }
is_ready() { [ "$(cstat "$1" ready)" = "$2" ] && [ "$(cond "$1" Ready)" = "$3" ]; }
restarts_at_least() { [ "$(cstat "$1" restartCount)" -ge "$2" ] 2>/dev/null; }
event_has() { k get events --field-selector "involvedObject.name=$1" -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null | grep -qF -- "$2"; }
mkpod() { # NAME RUNTIME YAML-OF-CONTAINERS (stdin)
    local extra=
    [ "$2" = process ] && extra="  runtimeClassName: fatia-process"
    {
        echo "apiVersion: v1"
        echo "kind: Pod"
        echo "metadata: {name: $1, labels: {app: $1}}"
        echo "spec:"
        echo "  terminationGracePeriodSeconds: ${GRACE:-1}"
        [ -n "${3:-}" ] && echo "$3"
        [ -n "$extra" ] && echo "$extra"
        echo "  containers:"
        cat
    } >"$TMP/$1.yaml"
    k create -f "$TMP/$1.yaml" >/dev/null || fail "cannot create pod $1"
}

port=18300
for rt in oci process; do
    # in the process mode the pods share the host's /tmp and ports: each gets its own
    if [ $rt = oci ]; then S=/tmp; else S=$SHARED/$rt; mkdir -p "$S" && chmod 1777 "$S"; fi
    p1=$((port + 1))
    port=$((port + 10))

    # ---- readiness (exec) both ways, and the Endpoints ----
    k create service clusterip "ready-$rt" --tcp=80:8080 >/dev/null || fail "create service"
    k patch service "ready-$rt" --type merge -p "{\"spec\":{\"selector\":{\"app\":\"ready-$rt\"}}}" >/dev/null
    mkpod "ready-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "rm -f $S/ready-$rt; exec sleep 600"]
    readinessProbe:
      exec: {command: ["cat", "$S/ready-$rt"]}
      periodSeconds: 1
      failureThreshold: 1
EOF
    wait_for 40 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod ready-$rt -o jsonpath='{.status.containerStatuses[0].started}')\" = true ]"
    sleep 2
    is_ready "ready-$rt" false False || fail "$rt: ready before its probe succeeded: $(jp ready-$rt .status)"
    [ "$(cond "ready-$rt" ContainersReady)" = False ] || fail "$rt: ContainersReady is not False"
    wait_for 20 sh -c "[ -n \"\$($KUBECTL --kubeconfig $KCFG get endpoints ready-$rt -o jsonpath='{.subsets[*].notReadyAddresses[*].ip}')\" ]"
    [ -z "$(k get endpoints "ready-$rt" -o 'jsonpath={.subsets[*].addresses[*].ip}')" ] ||
        fail "$rt: an unready pod is in the Service's ready addresses"
    k exec "ready-$rt" -- touch "$S/ready-$rt" || fail "$rt: exec touch"
    wait_for 20 is_ready "ready-$rt" true True
    wait_for 20 sh -c "[ -n \"\$($KUBECTL --kubeconfig $KCFG get endpoints ready-$rt -o jsonpath='{.subsets[*].addresses[*].ip}')\" ]"
    k exec "ready-$rt" -- rm "$S/ready-$rt" || fail "$rt: exec rm"
    wait_for 20 is_ready "ready-$rt" false False
    wait_for 20 sh -c "[ -z \"\$($KUBECTL --kubeconfig $KCFG get endpoints ready-$rt -o jsonpath='{.subsets[*].addresses[*].ip}')\" ]"
    [ "$(cstat "ready-$rt" restartCount)" = 0 ] || fail "$rt: a readiness failure restarted the container"
    event_has "ready-$rt" "Unhealthy: Readiness probe failed:" || fail "$rt: no Unhealthy Event"

    # ---- readiness (httpGet on a named port) ----
    mkpod "http-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "mkdir -p $S/www-$rt; rm -f $S/www-$rt/healthz; exec busybox httpd -f -p $p1 -h $S/www-$rt"]
    ports: [{name: web, containerPort: $p1}]
    readinessProbe:
      httpGet: {path: /healthz, port: web, httpHeaders: [{name: X-Probe, value: fatia}]}
      periodSeconds: 1
      failureThreshold: 1
EOF
    wait_for 40 sh -c "$KUBECTL --kubeconfig $KCFG get events --field-selector involvedObject.name=http-$rt -o jsonpath='{.items[*].message}' | grep -qF 'HTTP probe failed with statuscode: 404'"
    is_ready "http-$rt" false False || fail "$rt: http: ready while /healthz is 404"
    k exec "http-$rt" -- sh -c "echo ok > $S/www-$rt/healthz" || fail "$rt: write healthz"
    wait_for 20 is_ready "http-$rt" true True

    # ---- liveness (exec): killed and restarted; Never: not restarted ----
    # the probe's own grace period wins over the pod's 120 s (sleep as a container's pid 1
    # ignores SIGTERM: only the SIGKILL after the grace period ends it)
    GRACE=120 mkpod "live-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "touch $S/alive-$rt; exec sleep 600"]
    livenessProbe:
      exec: {command: ["cat", "$S/alive-$rt"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
EOF
    wait_for 40 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod live-$rt -o jsonpath='{.status.containerStatuses[0].ready}')\" = true ]"
    sleep 3
    [ "$(cstat "live-$rt" restartCount)" = 0 ] || fail "$rt: a passing liveness probe restarted the container"
    k exec "live-$rt" -- rm -f "$S/alive-$rt"
    wait_for 20 restarts_at_least "live-$rt" 1
    [ -n "$(cstat "live-$rt" lastState.terminated.exitCode)" ] ||
        fail "$rt: no lastState.terminated after the liveness kill: $(cstat "live-$rt" lastState)"
    wait_for 10 event_has "live-$rt" "Killing: Container main failed liveness probe, will be restarted"
    event_has "live-$rt" "Unhealthy: Liveness probe failed:" || fail "$rt: no Unhealthy Event for liveness"
    # the new instance made its file again: it stays
    sleep 3
    [ "$(cstat "live-$rt" restartCount)" = 1 ] || fail "$rt: restarted again: $(cstat "live-$rt" restartCount)"

    mkpod "never-$rt" $rt "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
    livenessProbe:
      tcpSocket: {port: $((p1 + 1))}
      periodSeconds: 1
      failureThreshold: 1
EOF
    wait_for 40 phase_is "never-$rt" Failed
    [ "$(cstat "never-$rt" restartCount)" = 0 ] || fail "$rt: restartPolicy Never restarted it"
    [ -n "$(cstat "never-$rt" state.terminated.exitCode)" ] || fail "$rt: never: not terminated"
    event_has "never-$rt" "connect: Connection refused" || event_has "never-$rt" "connection refused" ||
        fail "$rt: tcp failure message: $(k get events --field-selector involvedObject.name=never-$rt -o jsonpath='{.items[*].message}')"

    # ---- liveness (tcpSocket) passing, startup gating, exec timeout ----
    mkpod "tcp-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["busybox", "httpd", "-f", "-p", "$((p1 + 2))", "-h", "/"]
    livenessProbe:
      tcpSocket: {port: $((p1 + 2))}
      periodSeconds: 1
      failureThreshold: 1
      initialDelaySeconds: 1
EOF
    mkpod "start-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "rm -f $S/started-$rt; exec sleep 600"]
    startupProbe:
      exec: {command: ["cat", "$S/started-$rt"]}
      periodSeconds: 1
      failureThreshold: 60
    livenessProbe:
      exec: {command: ["cat", "$S/started-$rt"]}
      periodSeconds: 1
      failureThreshold: 1
EOF
    mkpod "slow-$rt" $rt <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
    readinessProbe:
      exec: {command: ["sleep", "30"]}
      periodSeconds: 2
      timeoutSeconds: 1
EOF
    wait_for 40 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod start-$rt -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')\" != '' ]"
    sleep 4
    [ "$(cstat "start-$rt" started)" = false ] || fail "$rt: started before its startup probe succeeded"
    is_ready "start-$rt" false False || fail "$rt: startup: ready before started"
    [ "$(cstat "start-$rt" restartCount)" = 0 ] || fail "$rt: liveness ran before the startup probe succeeded"
    k exec "start-$rt" -- touch "$S/started-$rt" || fail "$rt: touch started"
    wait_for 20 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod start-$rt -o jsonpath='{.status.containerStatuses[0].started}')\" = true ]"
    wait_for 10 is_ready "start-$rt" true True
    [ "$(cstat "tcp-$rt" restartCount)" = 0 ] || fail "$rt: a listening port failed its tcp probe"
    is_ready "tcp-$rt" true True || fail "$rt: tcp pod not ready"
    wait_for 20 event_has "slow-$rt" "Readiness probe failed: command timed out"
    is_ready "slow-$rt" false False || fail "$rt: a timed-out readiness probe left it ready"
done

# ---- hostile specs: refused with the field path, nothing runs ----
mkpod smuggle oci <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
    readinessProbe:
      httpGet: {port: 80, httpHeaders: [{name: X-A, value: "a\r\nX-Injected: 1"}]}
EOF
mkpod badport oci <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
    livenessProbe:
      tcpSocket: {port: nosuch}
EOF
wait_for 20 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod smuggle -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')\" = CreateContainerConfigError ]"
cstat smuggle state.waiting.message | grep -qF 'spec.containers[0].readinessProbe.httpGet.httpHeaders[0]: Invalid value' ||
    fail "smuggling header: $(cstat smuggle state.waiting.message)"
wait_for 20 sh -c "$KUBECTL --kubeconfig $KCFG get pod badport -o jsonpath='{.status.containerStatuses[0].state.waiting.message}' | grep -qF 'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: \"nosuch\"'"
[ -z "$(cstat smuggle state.running.startedAt)" ] || fail "the smuggling pod runs"
k delete pod --all --grace-period=1 --wait=false >/dev/null 2>&1
wait_for 60 sh -c "! $KUBECTL --kubeconfig $KCFG get pods -o name 2>/dev/null | grep -q ." ||
    k get pods >&2
finish
