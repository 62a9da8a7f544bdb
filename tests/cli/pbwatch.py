#!/usr/bin/env python3
"""tests/cli/pbwatch.py FILE: reads a protobuf watch stream (as curl saved it) by hand from the
wire rules: frames of a 4-byte big-endian length and a meta/v1 WatchEvent {1 type, 2 object:
RawExtension {1 raw}}, raw being k8s\\0 + runtime.Unknown {1 typeMeta {1 apiVersion, 2 kind},
2 the Namespace {1 ObjectMeta {1 name}}}. Prints "TYPE KIND NAME" per event."""
import struct
import sys


def fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, v))
    return out


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def get(fs, num):
    for n, v in fs:
        if n == num:
            return v
    return b""


data = open(sys.argv[1], "rb").read()
i = 0
while i + 4 <= len(data):
    (n,) = struct.unpack(">I", data[i:i + 4])
    ev = fields(data[i + 4:i + 4 + n])
    i += 4 + n
    typ = get(ev, 1).decode()
    raw = get(fields(get(ev, 2)), 1)
    assert raw[:4] == b"k8s\x00", raw[:8]
    unk = fields(raw[4:])
    kind = get(fields(get(unk, 1)), 2).decode()
    name = get(fields(get(fields(get(unk, 2)), 1)), 1).decode()
    print(typ, kind, name)
if i != len(data):
    sys.exit("a partial frame at the end: %d bytes" % (len(data) - i))
