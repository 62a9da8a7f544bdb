#!/usr/bin/env python3
"""tests/gateway/fake_upstream.py: a model server whose bytes the tests know exactly.

Used by tests/cli/gateway.sh to check that the gateway relays streamed answers byte for byte,
chunk by chunk, with backpressure, and what it does when an upstream trickles or dies mid-answer.
Paths (any method; request bodies are read and ignored):

  /health                200, empty
  /metrics               vLLM-style gauges (waiting comes from the WAITING environment variable)
  /v1/models             one model, "fake"
  /v1/completions        an SSE stream of N events in odd chunk splits (N from ?n=, default 20),
                         or /v1/completions?mode=slow: 10 events 50 ms apart,
                         or ?mode=die: 5 events, then the connection is dropped mid-chunk,
                         or ?mode=big: a 2 MiB Content-Length body of a known pattern,
                         or ?mode=hang: no answer at all (the connection stays open),
                         or ?mode=barelf: a chunked answer whose framing uses bare LFs,
                         or ?mode=head: the request head it received, as the body,
                         or ?mode=reset2: the first two such requests get their connection
                         reset (RST, no answer: what a draining replica's closed listener does
                         to the connections in its accept queue), later ones the SSE stream
Usage: fake_upstream.py PORTFILE   (listens on 127.0.0.1, an ephemeral port written to PORTFILE)
"""
import asyncio
import os
import socket
import struct
import sys

RESETS = {"left": 2}


def sse_events(n):
    return [("data: {\"i\":%d,\"text\":\"%s\"}\n\n" % (i, "x" * (i % 37))).encode()
            for i in range(n)] + [b"data: [DONE]\n\n"]


def chunk(b):
    return b"%x\r\n" % len(b) + b + b"\r\n"


BIG = bytes((i * 7 + i // 251) % 256 for i in range(2 << 20))


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            length = 0
            for l in lines[1:]:
                if l.lower().startswith("content-length:"):
                    length = int(l.split(":", 1)[1])
            if length:
                await reader.readexactly(length)
            path, _, query = target.partition("?")
            q = dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv)
            if path == "/health":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            elif path == "/metrics":
                body = ("vllm:num_requests_waiting{model_name=\"fake\"} %s\n"
                        "vllm:num_requests_running{model_name=\"fake\"} 0\n"
                        "vllm:kv_cache_usage_perc{model_name=\"fake\"} 0.1\n"
                        % os.environ.get("WAITING", "0")).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif path == "/v1/models":
                body = b'{"object":"list","data":[{"id":"fake","object":"model"}]}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body)
            elif q.get("mode") == "head":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(head) + head)
            elif q.get("mode") == "reset2" and RESETS["left"] > 0:
                RESETS["left"] -= 1
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            elif q.get("mode") == "hang":
                await asyncio.sleep(3600)
            elif q.get("mode") == "barelf":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n"
                             b"f\ndata: SMUGGLED\n\n\n0\n\n")
            elif q.get("mode") == "big":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(BIG))
                writer.write(BIG)
            else:
                mode = q.get("mode", "")
                n = {"slow": 10, "die": 5}.get(mode, int(q.get("n", "20")))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                data = b"".join(sse_events(n))
                if mode in ("slow", "die"):
                    for ev in sse_events(n)[:-1]:
                        writer.write(chunk(ev))
                        await writer.drain()
                        await asyncio.sleep(0.05)
                    if mode == "die":
                        writer.write(b"40\r\ndata: trunc")  # a chunk cut short
                        await writer.drain()
                        writer.transport.abort()
                        return
                    writer.write(chunk(sse_events(n)[-1]))
                else:
                    # odd splits: chunk boundaries fall inside events and lines
                    pos, k = 0, 0
                    while pos < len(data):
                        step = (k * 13) % 41 + 1
                        writer.write(chunk(data[pos:pos + step]))
                        pos += step
                        k += 1
                writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
