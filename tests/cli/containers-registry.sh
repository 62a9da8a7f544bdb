#!/usr/bin/env bash
# tests/cli/containers-registry.sh: images pulled from a registry (Debian's docker-registry,
# started here on loopback) by imagePullPolicy, as kubelet reads it: the test builds an image
# itself (scripts/images/busybox), pushes it with skopeo, and a pod with imagePullPolicy: Always
# runs it; the image is pushed again with other content under the same tag and the next Always
# pod runs the new digest (the tag is resolved at the registry); IfNotPresent keeps the stored
# one; a tag the registry lacks is ErrImagePull with the registry's answer in the message.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox docker-registry
agent_setup
REG_PID=
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    [ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
D=$TMP/d

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/registry.yml" <<EOF
version: 0.1
storage: {filesystem: {rootdirectory: $TMP/registry}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$PORT}
EOF
docker-registry serve "$TMP/registry.yml" >"$TMP/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$PORT/v2/" >/dev/null && break
    sleep 0.1
done
curl -fs "http://127.0.0.1:$PORT/v2/" >/dev/null || { fail "the registry did not start: $(cat "$TMP/registry.log")"; finish; }

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
REF=127.0.0.1:$PORT/fatia/busybox:1
push() {
    skopeo --insecure-policy copy -q --dest-tls-verify=false "oci-archive:$1" "docker://$REF" ||
        fail "cannot push to the registry"
}
push "$TMP/busybox.tar"
DIG1=$(skopeo inspect --tls-verify=false "docker://$REF" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')

start_fatiad "$D" --no-controllers --agent runtime=oci --agent "insecure-registries=127.0.0.1:$PORT" \
    --agent restart-backoff=1s --agent restart-backoff-max=2s || exit 1

bound_pod always "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["sh", "-c", "echo pulled; cat /etc/version 2>/dev/null || echo v1"]
EOF
wait_for 30 phase_is always Succeeded
[ "$(k logs always 2>/dev/null | tail -1)" = v1 ] || fail "the pulled image: $(k logs always 2>&1)"
[ "$(jp always '.status.containerStatuses[0].imageID')" = "$DIG1" ] ||
    fail "imageID $(jp always '.status.containerStatuses[0].imageID'), the registry's digest $DIG1"
"$FATIA" image ls -d "$D" >"$TMP/ls" 2>&1
expect_line "$TMP/ls" "$REF"

# the same tag, other content: Always resolves it again, IfNotPresent keeps what is stored
W=$TMP/v2
mkdir -p "$W"
skopeo --insecure-policy copy -q "oci-archive:$TMP/busybox.tar" "oci:$W/layout:img"
umoci unpack --image "$W/layout:img" "$W/b" >/dev/null
echo v2 >"$W/b/rootfs/etc/version"
umoci repack --image "$W/layout:img" "$W/b"
skopeo --insecure-policy copy -q "oci:$W/layout:img" "oci-archive:$TMP/busybox2.tar"
push "$TMP/busybox2.tar"
DIG2=$(skopeo inspect --tls-verify=false "docker://$REF" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')
[ "$DIG1" != "$DIG2" ] || fail "the second push has the first digest"
bound_pod stored "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "cat /etc/version 2>/dev/null || echo v1"]
EOF
wait_for 30 phase_is stored Succeeded
[ "$(k logs stored 2>/dev/null)" = v1 ] || fail "IfNotPresent pulled again: $(k logs stored 2>&1)"
bound_pod again "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: Always
    command: ["sh", "-c", "cat /etc/version 2>/dev/null || echo v1"]
EOF
wait_for 30 phase_is again Succeeded
[ "$(k logs again 2>/dev/null)" = v2 ] || fail "Always did not resolve the tag again: $(k logs again 2>&1)"
[ "$(jp again '.status.containerStatuses[0].imageID')" = "$DIG2" ] ||
    fail "imageID after the second pull: $(jp again '.status.containerStatuses[0].imageID'), want $DIG2"

bound_pod missing "" "  restartPolicy: Never" <<EOF
  - name: main
    image: 127.0.0.1:$PORT/fatia/absent:9
    command: ["true"]
EOF
wait_for 30 phase_is missing Pending
[ "$(jp missing '.status.containerStatuses[0].state.waiting.reason')" = ErrImagePull ] ||
    fail "a tag the registry lacks: $(jp missing '.status.containerStatuses[0].state')"
jp missing '.status.containerStatuses[0].state.waiting.message' | grep -q "failed to pull" ||
    fail "pull message: $(jp missing '.status.containerStatuses[0].state.waiting.message')"
# kubelet's back-off: ImagePullBackOff between tries, and the pull tried again: once the tag
# exists, the pod runs
backoff() { [ "$(jp missing '.status.containerStatuses[0].state.waiting.reason')" = ImagePullBackOff ]; }
wait_for 10 backoff
skopeo --insecure-policy copy -q --dest-tls-verify=false "oci-archive:$TMP/busybox.tar" \
    "docker://127.0.0.1:$PORT/fatia/absent:9" || fail "cannot push fatia/absent:9"
wait_for 30 phase_is missing Succeeded

# ---- the image GC: over the store's limit, unused images go, the ones running pods use stay ----
stop_fatiad
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/other:1 "$TMP/busybox.tar"
start_fatiad "$D" --no-controllers --agent runtime=oci --agent "insecure-registries=127.0.0.1:$PORT" \
    --agent image-store-max=1 || exit 1
bound_pod keep "" "" <<EOF
  - name: main
    image: $REF
    imagePullPolicy: IfNotPresent
    command: ["sleep", "60"]
EOF
wait_for 30 sh -c "[ -n \"\$($KUBECTL --kubeconfig $KCFG get pod keep -o 'jsonpath={.status.containerStatuses[0].state.running.startedAt}')\" ]"
"$FATIA" image ls -d "$D" >"$TMP/ls" 2>&1
expect_line "$TMP/ls" "$REF"
grep -q "fatia.dev/other:1" "$TMP/ls" && fail "the GC kept an unused image over the store's limit: $(cat "$TMP/ls")"
grep -q "image GC removed" "$D.log" || fail "fatiad does not log the image GC"
ls "$D/agent/images/rootfs" | grep -q "^${DIG1#sha256:}-" && fail "the unused image's rootfs copy is still there"
k delete pod keep --grace-period=0 --wait=false >/dev/null
finish
