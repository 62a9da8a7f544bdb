#!/usr/bin/env bash
# tests/cli/containers-user.sh: an image whose config User is a name ("app:app", "app",
# "nobody") runs as the ids the image's own /etc/passwd and /etc/group give (runc's rule:
# src/agent/imguser.c), with the supplementary groups that list the user; runAsUser still wins;
# an unknown name fails CreateContainerError "unable to find user ..."; and the files are read
# inside the image: an image whose /etc/passwd is a link to a host file (absolute, or climbing
# with ../) that names the user does not get it (the link resolves within the rootfs). The
# images are scripts/images/busybox with accounts added and umoci's --config.user.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
agent_setup
cleanup() {
    agent_cleanup
    [ -n "${FATIAD_PID:-}" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
D=$TMP/d

# the images: accounts in the rootfs, one tag per User
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" >/dev/null || { fail "cannot build the image"; finish; }
L=$TMP/layout
skopeo --insecure-policy copy -q "oci-archive:$TMP/busybox.tar" "oci:$L:base" || { fail "skopeo copy"; finish; }
umoci unpack --image "$L:base" "$TMP/b" >/dev/null || { fail "umoci unpack"; finish; }
printf 'app:x:1000:1001:App:/home/app:/bin/sh\n' >>"$TMP/b/rootfs/etc/passwd"
printf 'app:x:1001:\nvideo:x:44:other,app\nstaff:x:50:appx\n' >>"$TMP/b/rootfs/etc/group"
umoci repack --image "$L:accounts" "$TMP/b" >/dev/null || { fail "umoci repack"; finish; }
# a host file naming a user the image lacks, and images whose /etc/passwd links to it
printf 'hostonly:x:4321:4321::/:/bin/sh\n' >"$TMP/hostpasswd"
chmod 644 "$TMP/hostpasswd"
rm -rf "$TMP/b"
umoci unpack --image "$L:base" "$TMP/b" >/dev/null
ln -sf "$TMP/hostpasswd" "$TMP/b/rootfs/etc/passwd"
umoci repack --image "$L:abs" "$TMP/b" >/dev/null
ln -sf "../../../../../../../../../..$TMP/hostpasswd" "$TMP/b/rootfs/etc/passwd"
umoci repack --image "$L:climb" "$TMP/b" >/dev/null
rm -rf "$TMP/b"
image() { # image NAME FROM USER
    umoci config --image "$L:$2" --tag "$1" --config.user "$3" || fail "umoci config $1"
    skopeo --insecure-policy copy -q "oci:$L:$1" "oci-archive:$TMP/$1.tar" || fail "skopeo $1"
    "$FATIA" image load -d "$D" --name "fatia.dev/$1:1" "$TMP/$1.tar" >/dev/null || fail "image load $1"
}
image appapp accounts app:app
image app accounts app
image nobody accounts nobody
image ghost accounts ghost
image appghost accounts app:ghosts
image abs abs hostonly
image climb climb hostonly

start_fatiad "$D" --no-controllers --agent runtime=oci || finish
for p in appapp app nobody ghost appghost abs climb; do
    bound_pod "$p" "" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/$p:1
    command: ["sh", "-c", "echo \$(id -u) \$(id -g) / \$(id -G) HOME=\$HOME"]
EOF
done
bound_pod runas "" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/appapp:1
    command: ["sh", "-c", "echo \$(id -u) \$(id -g) / \$(id -G) HOME=\$HOME"]
    securityContext: {runAsUser: 2000}
EOF
waiting() { [ "$(jp "$1" '.status.containerStatuses[0].state.waiting.reason')" = "$2" ]; }
# HOME from the user's passwd entry in the image (as runc sets it), else / (no entry)
for p in appapp:"1000 1001 / 1001 HOME=/home/app" app:"1000 1001 / 1001 44 HOME=/home/app" \
    nobody:"65534 65534 / 65534 HOME=/" runas:"2000 0 / 0 HOME=/"; do
    name=${p%%:*}
    want=${p#*:}
    wait_for 30 phase_is "$name" Succeeded || { k get pod "$name" -o yaml >&2; continue; }
    got=$(k logs "$name")
    [ "$got" = "$want" ] || fail "pod $name (User from the image) ran as '$got', want '$want'"
done
for p in ghost:"the image's User 'ghost': unable to find user ghost: no matching entries in passwd file" \
    appghost:"unable to find group ghosts: no matching entries in group file" \
    abs:"unable to find user hostonly" climb:"unable to find user hostonly"; do
    name=${p%%:*}
    want=${p#*:}
    wait_for 30 waiting "$name" CreateContainerError ||
        { fail "pod $name: $(jp "$name" .status.containerStatuses)"; continue; }
    jp "$name" '.status.containerStatuses[0].state.waiting.message' | grep -qF -- "$want" ||
        fail "pod $name: message '$(jp "$name" '.status.containerStatuses[0].state.waiting.message')' lacks '$want'"
done
stop_fatiad
finish
