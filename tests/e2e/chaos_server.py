#!/usr/bin/env python3
"""A scripted, misbehaving OpenAI-compatible server for tests/e2e/test_chaos.sh.

Usage: chaos_server.py MODE. Listens on 127.0.0.1 on a port the OS picks,
prints "listening on 127.0.0.1:PORT" (one line, flushed), and serves
GET /v1/models normally; every POST gets MODE's misbehaviour. Standard
library only; loopback only; it exits when its parent test kills it (or by
itself in mode die).
"""
import json
import os
import socket
import sys
import threading
import time

MODE = sys.argv[1]
MODEL = json.dumps({"object": "list", "data": [{"id": "chaos", "object": "model"}]}).encode()
SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
posts = 0
lock = threading.Lock()


def chunk(content=None, usage=None, finish=None):
    d = {"id": "c", "object": "chat.completion.chunk", "model": "chaos",
         "choices": [{"index": 0, "delta": {} if content is None else {"content": content},
                      "finish_reason": finish}]}
    if usage is not None:
        d["usage"] = usage
    return b"data: " + json.dumps(d).encode() + b"\n\n"


GOOD = chunk("Hello") + chunk(" world", finish="stop")
DONE = b"data: [DONE]\n\n"


def read_request(conn):
    """The request head and body; None at EOF."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    while len(body) < n:
        d = conn.recv(65536)
        if not d:
            return None
        body += d
    return head.split(b"\r\n")[0]


# Modes whose every answer is the same bytes.
CANNED = {
    # A clean stream without usage: the client counts the tokens itself.
    "good": SSE_HEAD + GOOD + DONE,
    # An answer far longer than any max_tokens.
    "long": SSE_HEAD + chunk("x" * (256 << 10), finish="stop") + DONE,
    "badutf8": SSE_HEAD + b'data: {"object":"chat.completion.chunk","choices":[{"index":0,'
               b'"delta":{"content":"ok \xff\xfe bad"}}]}\n\n' + DONE,
    "contentlength": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5\r\n"
                     b"Connection: close\r\n\r\n" + GOOD + DONE,
    "done2": SSE_HEAD + GOOD + DONE + DONE,
    "afterdone": SSE_HEAD + chunk("Hello") + DONE + chunk(" late"),
    # What llama.cpp's server sends when the prompt exceeds its context.
    "errorfield": SSE_HEAD + b'error: {"code":400,"message":"the request exceeds the available '
                  b'context size, try increasing it","type":"invalid_request_error"}\n\n' + DONE,
    "bigusage": SSE_HEAD + chunk("Hello", usage={"prompt_tokens": 5, "completion_tokens": 10**9,
                                                 "total_tokens": 10**9 + 5}) + DONE,
    "html": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 53\r\n"
            b"Connection: close\r\n\r\n<html><body><h1>Welcome to nginx!</h1></body></html>\n",
    # A server that refuses every request (tests/e2e/test_failing.sh).
    "refuse400": b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 48\r\n"
                 b"Connection: close\r\n\r\n" + b'{"error":{"message":"bad request","code":400}}  ',
    "ratelimit": b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\n"
                 b"Connection: close\r\n\r\n",
    # HTTP framing (tests/e2e/test_transport.sh: both client transports).
    "chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n" + b"".join(
                   b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in (GOOD[:7], GOOD[7:], DONE)) +
               b"0\r\nX-Trailer: t\r\n\r\n",
    "interim": b"HTTP/1.1 100 Continue\r\n\r\n" + SSE_HEAD + GOOD + DONE,
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + GOOD + DONE,
    "badchunk": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                b"Connection: close\r\n\r\nzz\r\n" + GOOD,
    "shortchunk": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                  b"Connection: close\r\n\r\n%x\r\n" % (len(GOOD) + 100) + GOOD,
    "shortlength": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 9999\r\n"
                   b"Connection: close\r\n\r\n" + GOOD,
    "nothttp": b"SSH-2.0-OpenSSH_9.0\r\n",
    "headonly": b"HTTP/1.1 200 OK\r\nContent-Type: text/ev",
    "hugehead": b"HTTP/1.1 200 OK\r\n" + b"X-Big: " + b"a" * (300 << 10) + b"\r\n\r\n" + GOOD + DONE,
    "clconflict": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5\r\n"
                  b"Content-Length: 6\r\nConnection: close\r\n\r\n" + GOOD + DONE,
    "obsfold": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A: 1\r\n folded\r\n"
               b"Connection: close\r\n\r\n" + GOOD + DONE,
}


def post(conn):
    global posts
    with lock:
        posts += 1
        k = posts
    if MODE in CANNED:
        conn.sendall(CANNED[MODE])
        return
    if MODE == "die":
        # Two good answers, then the third stream dies half-way with the
        # whole process: the rest find the port closed.
        if k <= 2:
            conn.sendall(SSE_HEAD + GOOD + DONE)
            return
        conn.sendall(SSE_HEAD + chunk("partial"))
        os._exit(0)
    if MODE == "resetmid":
        # A stream reset half-way (RST, not FIN: SO_LINGER 0).
        conn.sendall(SSE_HEAD + chunk("partial"))
        time.sleep(0.2)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.close()
        return
    if MODE == "slowloris":
        for b in b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n":
            conn.sendall(bytes([b]))
            time.sleep(1)
        return
    if MODE == "silent":
        while conn.recv(65536):
            pass
        return
    if MODE == "hugeline":
        conn.sendall(SSE_HEAD + b"data: ")
        block = b"a" * (1 << 20)
        for _ in range(100):  # 100 MiB, one line; the client gives up first
            conn.sendall(block)
        return
    raise SystemExit("unknown mode " + MODE)


def serve(conn):
    try:
        line = read_request(conn)
        if line is None:
            return
        if line.startswith(b"GET"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n" % len(MODEL) + MODEL)
        elif MODE == "stale":
            # Keep-alive, then the next request on the connection is closed
            # unanswered (a server's idle timeout racing the client's reuse).
            body = GOOD + DONE
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            read_request(conn)
        else:
            post(conn)
    except OSError:
        pass  # the client hung up: expected in several modes
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    print("listening on 127.0.0.1:%d" % s.getsockname()[1], flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
