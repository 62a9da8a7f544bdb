#!/usr/bin/env python3
"""tests/cli/pbbody.py: Kubernetes protobuf bodies for apiserver-protobuf.sh, built by hand from
the wire rules (k8s\\0 + runtime.Unknown{1 typeMeta{1 apiVersion, 2 kind}, 2 raw}), so the test
does not trust fatiad's own encoder. Writes the body to stdout.

  pbbody.py namespace NAME [LABELS]   a Namespace with LABELS labels (k0=v0, ...)
  pbbody.py truncated                 a Namespace body cut in the middle of a length
  pbbody.py cr                        a kueue ClusterQueue (a kind with no protobuf message)
  pbbody.py pod NS NAME               a Pod of one container, with a probe (an inline field)
"""
import sys


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def ld(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vi(num, v):
    return varint(num << 3) + varint(v)


def envelope(api_version, kind, raw):
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + ld(3, b"") + ld(4, b"")


def meta(name, ns=None, labels=0):
    m = ld(1, name)
    if ns:
        m += ld(3, ns)
    for i in range(labels):  # ObjectMeta.labels = 11, map entries {1 key, 2 value}
        m += ld(11, ld(1, "k%d" % i) + ld(2, "v%d" % i))
    return m


def main():
    what = sys.argv[1]
    if what == "namespace":
        body = envelope("v1", "Namespace", ld(1, meta(sys.argv[2], labels=int(sys.argv[3]) if len(sys.argv) > 3 else 0)))
    elif what == "truncated":
        body = envelope("v1", "Namespace", ld(1, meta("cut")))[:-12]
    elif what == "cr":
        body = envelope("kueue.x-k8s.io/v1beta2", "ClusterQueue", ld(1, meta("cq")))
    elif what == "pod":
        # Container{1 name, 2 image, 11 readinessProbe: Probe{1 handler(inline): ProbeHandler
        # {2 httpGet: HTTPGetAction{1 path, 2 port: IntOrString{1 type=1, 3 strVal}}}, 4 periodSeconds}}
        port = vi(1, 1) + ld(3, "http")
        probe = ld(1, ld(2, ld(1, "/healthz") + ld(2, port))) + vi(4, 7)
        container = ld(1, "c") + ld(2, "busybox") + ld(11, probe)
        spec = ld(2, container) + ld(3, "Never")  # PodSpec{2 containers, 3 restartPolicy}
        body = envelope("v1", "Pod", ld(1, meta(sys.argv[3], sys.argv[2])) + ld(2, spec))
    else:
        sys.exit(__doc__)
    sys.stdout.buffer.write(body)


if __name__ == "__main__":
    main()
