#!/usr/bin/env bash
# tests/cli/containers-satoken-renew-slow.sh: a projected ServiceAccount token is renewed in the
# running container before it expires, at 80 % of its life as kubelet does (agent/satoken.c):
# a pod's own serviceAccountToken source of expirationSeconds 600 (the least a TokenRequest
# takes) reads a new token after about 480 s and before 600 s, through the same file (the
# ..data swap); the new token works, and the old one until its own expiry. About 9 minutes.
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
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci || exit 1
cat <<EOF | k create -f - >/dev/null || fail "create the pod"
apiVersion: v1
kind: Pod
metadata: {name: renew}
spec:
  nodeName: node-0
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: main
    image: fatia.dev/busybox:1
    command: [sleep, "3600"]
    volumeMounts: [{name: tok, mountPath: /tok, readOnly: true}]
  volumes:
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 600}
EOF
running() { [ -n "$(jp renew '.status.containerStatuses[0].state.running.startedAt')" ]; }
wait_for 60 running
T0=$SECONDS
OLD=$(k exec renew -- cat /tok/token)
[ -n "$OLD" ] || fail "no token in the pod"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$D/tls.crt" -H "Authorization: Bearer $1" "$URL/api/v1/namespaces/default/pods/renew"; }
[ "$(code "$OLD")" = 403 ] || fail "the token is not taken as the ServiceAccount's (want 403 without a binding): $(code "$OLD")"
NEW=$OLD
while [ "$NEW" = "$OLD" ] && [ $((SECONDS - T0)) -lt 590 ]; do
    sleep 5
    NEW=$(k exec renew -- cat /tok/token 2>/dev/null || echo "$OLD")
done
AGE=$((SECONDS - T0))
echo "renewed after ${AGE}s" >&2
[ "$NEW" != "$OLD" ] || fail "the token was not renewed before it expired"
[ "$AGE" -ge 450 ] || fail "the token was renewed after ${AGE}s, before 80 % of its life"
[ "$(code "$NEW")" = 403 ] || fail "the renewed token is refused: $(code "$NEW")"
[ "$(code "$OLD")" = 403 ] || fail "the old token stopped before its expiry: $(code "$OLD")"
finish
