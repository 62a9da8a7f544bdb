#!/bin/bash
# bench/container-start.sh: container start latency, a pod bound -> its process running, for a
# cached image (issue 16: median under 300 ms), against the process mode and `podman run` of the
# same image, in the same run.
#
#   bench/container-start.sh [BUILD_DIR]      (as root; BENCH_RUNS, default 10)
#
# Each sample: a Pod already bound (spec.nodeName) is POSTed to a real fatiad (--agent
# runtime=oci), and the clock stops at the mtime of the file its process touches first
# (`touch /v/started` on an emptyDir, read from the host): the API write, the agent, the shim,
# runc create + start, the exec. The process mode runs the same pod with runtimeClassName
# fatia-process (`touch $HOME/started`). podman (Debian's, with its default runtime, or runc where
# that runtime refuses the host's cgroup layout, and the host's rlimits): `podman run --rm -v DIR:/v IMAGE touch /v/started` of the image loaded into
# podman, from the command's start to the file's mtime.
# The last lines are the medians.
set -u
build=$(cd "${1:-build}" && pwd)
runs=${BENCH_RUNS:-10}
cd "$(dirname "$0")/.." || exit 2
[ "$(id -u)" = 0 ] || { echo "bench/container-start.sh: needs root" >&2; exit 2; }
tmp=$(mktemp -d /tmp/fatia-bench.XXXXXX)
chmod 711 "$tmp"
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    for c in $(runc --root "$tmp/d/agent/runc" list -q 2>/dev/null); do
        runc --root "$tmp/d/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $tmp[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$tmp"
}
trap cleanup EXIT

scripts/images/busybox "$tmp/busybox.tar" || exit 1
"$build/bin/fatia" image load -d "$tmp/d" --name fatia.dev/busybox:1 "$tmp/busybox.tar" >/dev/null || exit 1
"$build/bin/fatiad" --data-dir "$tmp/d" --listen 127.0.0.1:0 --no-controllers \
    --agent runtime=oci >"$tmp/d.log" 2>&1 &
pid=$!
for _ in $(seq 500); do grep -q "serving the Kubernetes API" "$tmp/d.log" && break; sleep 0.02; done
url=$(grep -o 'https://127.0.0.1:[0-9]*' "$tmp/d.log" | tail -1)
token=$(awk '$2 == "admin" {print $1; exit}' "$tmp/d/tokens")

python3 - "$url" "$token" "$tmp/d/tls.crt" "$tmp/d" "$runs" <<'PY' >"$tmp/fatia.txt" || exit 1
import json, os, ssl, sys, time, urllib.request
url, token, ca, data, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
ctx = ssl.create_default_context(cafile=ca)
def post(obj):
    req = urllib.request.Request(url + "/api/v1/namespaces/default/pods", json.dumps(obj).encode(),
                                 {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, context=ctx))
def delete(name):
    req = urllib.request.Request(url + "/api/v1/namespaces/default/pods/" + name, method="DELETE",
                                 headers={"Authorization": "Bearer " + token})
    urllib.request.urlopen(req, context=ctx).read()
def sample(mode, i):
    name = "%s-%s" % (mode, i)
    spec = {"nodeName": "node-0", "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "fatia.dev/busybox:1"}]}
    if mode == "oci":
        spec["volumes"] = [{"name": "v", "emptyDir": {}}]
        spec["containers"][0]["command"] = ["touch", "/v/started"]
        spec["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v"}]
    else:
        spec["runtimeClassName"] = "fatia-process"
        spec["containers"][0]["command"] = ["sh", "-c", 'touch "$HOME/started"']
    t0 = time.time_ns()
    uid = post({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})["metadata"]["uid"]
    f = os.path.join(data, "agent/run", uid, "volumes/v/started" if mode == "oci" else "work/started")
    end = time.time() + 20
    while not os.path.exists(f):
        if time.time() > end:
            sys.exit("no start of %s in 20 s" % name)
        time.sleep(0.001)
    ms = (os.stat(f).st_mtime_ns - t0) / 1e6
    time.sleep(0.3)
    delete(name)
    return ms
sample("oci", "warm")  # the image's rootfs unpacked for the namespace's range: not part of a start
for i in range(runs):
    for mode in ("oci", "process"):
        print(mode, "%.1f" % sample(mode, i))
PY

if command -v podman >/dev/null; then
    podman load -q -i "$tmp/busybox.tar" >"$tmp/podman-load" 2>&1
    img=$(grep -o 'sha256:[0-9a-f]*' "$tmp/podman-load" | tail -1 | cut -c8-19)
    # podman's default rlimits (nofile 1048576) exceed this machine's hard limits: the host's
    pargs="--rm --ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=4096:4096"
    mkdir -p "$tmp/pv"
    # podman's default runtime (Debian's: crun) refuses a hybrid cgroup layout ("cgroups in
    # hybrid mode not supported"): then it runs with runc, as fatia does, and says so
    pod=(podman)
    if ! podman run $pargs -v "$tmp/pv:/v" "$img" true >"$tmp/podman-warm" 2>&1; then
        echo "podman: its default runtime failed ($(tail -1 "$tmp/podman-warm")): --runtime runc" >&2
        pod=(podman --runtime runc)
        "${pod[@]}" run $pargs -v "$tmp/pv:/v" "$img" true >/dev/null 2>&1 # warm
    fi
    for i in $(seq "$runs"); do
        rm -f "$tmp/pv/started"
        t0=$(date +%s%N)
        "${pod[@]}" run $pargs -v "$tmp/pv:/v" "$img" touch /v/started >/dev/null 2>&1
        t1=$(stat -c %.9Y "$tmp/pv/started" 2>/dev/null | tr -d .)
        [ -n "$t1" ] && echo "podman $(( (t1 - t0) / 100000 ))" | awk '{printf "podman %.1f\n", $2 / 10}'
    done >"$tmp/podman.txt"
else
    echo "podman: not installed (apt-get install podman), skipped" >&2
    : >"$tmp/podman.txt"
fi
cat "$tmp/fatia.txt" "$tmp/podman.txt" | awk '{v[$1] = v[$1] " " $2} END {for (m in v) print m ":" v[m]}' | sort
for m in oci process podman; do
    cat "$tmp/fatia.txt" "$tmp/podman.txt" | awk -v m="$m" '$1 == m {print $2}' | sort -n |
        awk -v m="$m" '{v[NR] = $1} END {if (NR) printf "median %s: %.1f ms (%d runs)\n", m, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), NR}'
done
