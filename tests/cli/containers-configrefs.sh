#!/usr/bin/env bash
# tests/cli/containers-configrefs.sh: ConfigMaps and Secrets in pods, in both runtimes (OCI
# containers from the busybox image this test builds, and the fatia-process RuntimeClass): env
# valueFrom configMapKeyRef / secretKeyRef, envFrom with a prefix, `optional`; configMap, secret
# and projected volumes with kubelet's ..data layout, items, modes, bound read-only and updated
# in place (atomically, by the ..data swap) when the object changes; a pod whose ConfigMap is
# missing waits with CreateContainerConfigError and kubelet's message, then starts once it is
# created; a hostile pod that names another namespace's Secret gets nothing; a Secret's value is
# never in fatiad's log, in Events or in a pod's status.
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
start_fatiad "$D" --no-controllers --agent runtime=oci --agent restart-backoff=100ms \
    --agent restart-backoff-max=300ms || exit 1
IMG=fatia.dev/busybox:1
running() { [ "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" != "" ]; }
waiting_reason() { jp "$1" '.status.containerStatuses[0].state.waiting.reason'; }
SECRET_VALUE=s3cr3t-Value-4242

# both kubectl versions create the objects
"$KUBECTL_DIR/kubectl.1.27" --kubeconfig "$KCFG" create configmap app --from-literal=mode=fast \
    --from-literal=level=3 >/dev/null || fail "kubectl 1.27: create configmap"
k create secret generic db --from-literal=password=$SECRET_VALUE --from-literal=user=adm \
    >/dev/null || fail "kubectl 1.33: create secret"
k create namespace other >/dev/null || fail "create namespace other"
k -n other create secret generic theirs --from-literal=token=other-tenant-token >/dev/null ||
    fail "create the other namespace's Secret"

# ---- env: valueFrom, envFrom with prefix, optional; both runtimes ----
for rt in oci process; do
    extra="  restartPolicy: Never"
    [ $rt = process ] && extra="$extra
  runtimeClassName: fatia-process"
    bound_pod "env-$rt" "" "$extra" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "echo M=\$M P=\$P C_mode=\$C_mode C_level=\$C_level user=\$user X=\$X O=\${O-unset}"]
    envFrom:
    - configMapRef: {name: app}
      prefix: C_
    - secretRef: {name: db}
    - secretRef: {name: no-such-secret, optional: true}
    env:
    - name: M
      valueFrom: {configMapKeyRef: {name: app, key: mode}}
    - name: P
      valueFrom: {secretKeyRef: {name: db, key: password}}
    - name: X
      value: "\$(M)-x"
    - name: O
      valueFrom: {configMapKeyRef: {name: app, key: nokey, optional: true}}
EOF
done
for rt in oci process; do
    wait_for 30 phase_is "env-$rt" Succeeded
    k logs "env-$rt" >"$TMP/env-$rt.log" 2>/dev/null
    expect_line "$TMP/env-$rt.log" "M=fast P=$SECRET_VALUE C_mode=fast C_level=3 user=adm X=fast-x O=unset"
done

# ---- a missing ConfigMap: CreateContainerConfigError, then started once it exists ----
bound_pod waits "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "echo late=\$L"]
    env:
    - name: L
      valueFrom: {configMapKeyRef: {name: late, key: k}}
EOF
wait_for 20 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod waits -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')\" = CreateContainerConfigError ]"
[ "$(jp waits '.status.containerStatuses[0].state.waiting.message')" = 'configmap "late" not found' ] ||
    fail "waiting message: $(jp waits '.status.containerStatuses[0].state.waiting.message')"
[ "$(jp waits .status.phase)" = Pending ] || fail "a pod waiting for its ConfigMap is $(jp waits .status.phase)"
k create configmap late --from-literal=k=arrived >/dev/null || fail "create configmap late"
wait_for 30 phase_is waits Succeeded
k logs waits >"$TMP/waits.log" 2>/dev/null
expect_line "$TMP/waits.log" "late=arrived"

# ---- hostile: another namespace's Secret is not found, by env, envFrom or volume ----
bound_pod steal-env "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "echo T=\$T"]
    env:
    - name: T
      valueFrom: {secretKeyRef: {name: theirs, key: token}}
EOF
bound_pod steal-vol "" "  restartPolicy: Never
  volumes:
  - {name: s, secret: {secretName: theirs}}" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "cat /s/token"]
    volumeMounts: [{name: s, mountPath: /s}]
EOF
wait_for 20 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod steal-env -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')\" = CreateContainerConfigError ]"
[ "$(jp steal-env '.status.containerStatuses[0].state.waiting.message')" = 'secret "theirs" not found' ] ||
    fail "another namespace's Secret: $(jp steal-env '.status.containerStatuses[0].state')"
wait_for 20 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod steal-vol -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')\" = CreateContainerConfigError ]"
jp steal-vol '.status.containerStatuses[0].state.waiting.message' | grep -q 'secret "theirs" not found' ||
    fail "another namespace's Secret as a volume: $(jp steal-vol '.status.containerStatuses[0].state')"
[ "$(jp steal-env .status.phase)" = Pending ] || fail "steal-env is $(jp steal-env .status.phase)"

# ---- volumes: configMap (all keys), secret (items, mode), projected; read-only; updated ----
bound_pod vols "" "  restartPolicy: Never
  volumes:
  - {name: cfg, configMap: {name: app}}
  - name: sec
    secret:
      secretName: db
      defaultMode: 0400
      items: [{key: password, path: sub/pw}, {key: user, path: u, mode: 0440}]
  - name: proj
    projected:
      sources:
      - configMap: {name: app, items: [{key: mode, path: m}]}
      - secret: {name: db, items: [{key: user, path: who}]}
  - {name: opt, configMap: {name: absent, optional: true}}" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "cat /cfg/mode; echo; cat /sec/sub/pw; echo; cat /proj/m /proj/who; echo; stat -c '%a %n' /sec/..data/sub/pw /sec/..data/u; ls -A /opt | wc -l; if touch /cfg/new 2>/dev/null; then echo cfg-writable; else echo cfg-readonly; fi; while [ \"\$(cat /cfg/mode)\" != slow ]; do sleep 0.2; done; echo updated=\$(cat /cfg/mode) level=\$(cat /cfg/level) extra=\$(cat /cfg/extra); exec sleep 600"]
    volumeMounts:
    - {name: cfg, mountPath: /cfg, readOnly: false}
    - {name: sec, mountPath: /sec}
    - {name: proj, mountPath: /proj}
    - {name: opt, mountPath: /opt}
EOF
wait_for 30 running vols
wait_for 10 sh -c "$KUBECTL --kubeconfig $KCFG logs vols | grep -q cfg-"
k logs vols >"$TMP/vols.log" 2>/dev/null
expect_line "$TMP/vols.log" "fast"
expect_line "$TMP/vols.log" "$SECRET_VALUE"
expect_line "$TMP/vols.log" "fastadm"
expect_line "$TMP/vols.log" "400 /sec/..data/sub/pw"
expect_line "$TMP/vols.log" "440 /sec/..data/u"
expect_line "$TMP/vols.log" "0"
expect_line "$TMP/vols.log" "cfg-readonly"
# the layout on the host: ..data a link to the payload directory, the key a link through it
VD=$D/agent/run/$(jp vols .metadata.uid)/volumes/cfg
[ -L "$VD/..data" ] || fail "no ..data symlink in $VD: $(ls -A "$VD" 2>&1)"
[ "$(readlink "$VD/mode")" = ..data/mode ] || fail "mode is not a link into ..data: $(ls -lA "$VD")"
old=$(readlink "$VD/..data")
k patch configmap app --type merge -p '{"data":{"mode":"slow","extra":"new"}}' >/dev/null ||
    fail "patch configmap app"
wait_for 30 sh -c "$KUBECTL --kubeconfig $KCFG logs vols | grep -q updated="
k logs vols >"$TMP/vols.log" 2>/dev/null
expect_line "$TMP/vols.log" "updated=slow level=3 extra=new"
new=$(readlink "$VD/..data")
[ "$old" != "$new" ] || fail "the update did not swap ..data ($old)"
[ -e "$VD/$old" ] && fail "the former payload $old is left behind"
# a key removed from the ConfigMap goes from the volume
k patch configmap app --type json -p '[{"op":"remove","path":"/data/extra"}]' >/dev/null
wait_for 30 sh -c "[ ! -e $VD/extra ]"

# ---- no Secret value in fatiad's log, Events or any pod's status ----
k get events -A -o json >"$TMP/events.json" 2>/dev/null
grep -q "$SECRET_VALUE" "$TMP/events.json" && fail "a Secret's value is in an Event"
grep -q "other-tenant-token" "$TMP/events.json" && fail "the other namespace's Secret is in an Event"
grep -q "$SECRET_VALUE\|other-tenant-token" "$D.log" && fail "a Secret's value is in fatiad's log"
k get pods -o json >"$TMP/pods.json"
grep -q "$SECRET_VALUE" "$TMP/pods.json" && fail "a Secret's value is in a pod's status"
k delete pod --all --grace-period=1 --wait=false >/dev/null 2>&1
wait_for 30 sh -c "! $KUBECTL --kubeconfig $KCFG get pods -o name 2>/dev/null | grep -q ."
finish
