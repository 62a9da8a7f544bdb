#!/usr/bin/env bash
# tests/cli/agent-vgpu-ns.sh: the process mode's read-only interposer configuration (issue 16,
# src/agent/vgpu_ns.c). As root, the agent runs a capped container's processes in a private
# mount namespace whose /etc is the host's with the slice's ld.so.preload and fatia/vgpu.conf laid
# over it, read-only. The pod (its uid, no_new_privs) then tries: env -i, LD_PRELOAD dropped with
# its own FATIA_VGPU_* caps, writing both files, unmounting /etc (also from a user namespace of
# its own); each allocation over its 64 MiB cap is refused by the interposer (fake driver),
# within it granted. The host's /etc is unchanged. With --agent vgpu-namespace=off the same env -i
# allocation is granted: the check can fail.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
[ "$(id -u)" = 0 ] || skip "the mount namespace needs root"
BUILD=$(cd "$BUILD" && pwd)
FAKE=$BUILD/tests/vgpu/fake
WORKER=$BUILD/tests/vgpu_worker
[ -x "$WORKER" ] && [ -e "$FAKE/libcuda.so.1" ] || { fail "build first"; finish; }
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
had_preload=no
[ -e /etc/ld.so.preload ] && had_preload=$(md5sum </etc/ld.so.preload)
had_fatia=no
[ -e /etc/fatia ] && had_fatia=yes
MiB=$((1 << 20))

cat >"$SHARED/tenant.sh" <<TENANT
echo "preload: \$(cat /etc/ld.so.preload)"
grep MEMORY_LIMIT /etc/fatia/vgpu.conf
w() { env -i LD_LIBRARY_PATH=$FAKE "\$@" $WORKER alloc \$SIZE | sed "s/^/\$NAME: /"; }
SIZE=$((100 * MiB)) NAME=env_i w
SIZE=$((32 * MiB)) NAME=env_i_ok w
SIZE=$((100 * MiB)) NAME=own_env w FATIA_VGPU_MEMORY_LIMIT_0=80Gi FATIA_VGPU_SHARED_FILE= FATIA_VGPU_DEVICE_UUIDS=
(echo FATIA_VGPU_MEMORY_LIMIT_0=80Gi >/etc/fatia/vgpu.conf) 2>/dev/null && echo wrote-conf
(: >/etc/ld.so.preload) 2>/dev/null && echo wrote-preload
umount /etc 2>/dev/null && echo unmounted
unshare -Urm sh -c 'umount /etc && echo unmounted-in-userns' 2>/dev/null
echo uid=\$(id -u)
TENANT
chmod 644 "$SHARED/tenant.sh"
DEV='[{"slice":"gpu-0-ts0","kind":"timeslice","gpuIndex":0,"uuid":"GPU-fake-0","memoryBytes":67108864}]'

D=$TMP/d
start_fatiad "$D" --no-controllers || finish
bound_pod t "$DEV" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sh", "$SHARED/tenant.sh"]
YAML
wait_for 20 phase_is t Succeeded
k logs t >"$TMP/t.log"
sed 's/^/  t: /' "$TMP/t.log"
expect_line "$TMP/t.log" "preload: $BUILD/lib/libfatia-vgpu.so"
expect_line "$TMP/t.log" "FATIA_VGPU_MEMORY_LIMIT_0=$((64 * MiB))"
expect_line "$TMP/t.log" "env_i: rc=2"
expect_line "$TMP/t.log" "env_i_ok: rc=0"
expect_line "$TMP/t.log" "own_env: rc=2"
grep -q "wrote-\|unmounted" "$TMP/t.log" && fail "t: the tenant changed its /etc: $(grep 'wrote-\|unmounted' "$TMP/t.log")"
grep -q "^uid=0$" "$TMP/t.log" && fail "t: ran as root"
stop_fatiad

# the host's /etc is as it was
now_preload=no
[ -e /etc/ld.so.preload ] && now_preload=$(md5sum </etc/ld.so.preload)
[ "$now_preload" = "$had_preload" ] || fail "the host's /etc/ld.so.preload changed"
now_fatia=no
[ -e /etc/fatia ] && now_fatia=yes
[ "$now_fatia" = "$had_fatia" ] || fail "the host's /etc/fatia appeared"

# vgpu-namespace=off: the environment is the configuration again, and env -i escapes the cap
D=$TMP/d2
start_fatiad "$D" --no-controllers --agent vgpu-namespace=off || finish
bound_pod t2 "$DEV" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sh", "$SHARED/tenant.sh"]
YAML
wait_for 20 phase_is t2 Succeeded
k logs t2 >"$TMP/t2.log"
expect_line "$TMP/t2.log" "env_i: rc=0"
stop_fatiad
finish
