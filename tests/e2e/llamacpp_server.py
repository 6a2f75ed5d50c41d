#!/usr/bin/env python3
"""A stand-in for llama.cpp's llama-server, for tests/e2e/test_server_tokens.sh.

Only the shapes infermeter reads, as llama.cpp documents and implements
them (tools/server/README.md, tools/server/server.cpp): POST /tokenize
{"content", "add_special"} -> {"tokens": [...]} (a request without
"content" gets no tokens, as llama.cpp ignores unknown fields), POST
/apply-template {"messages"} -> {"prompt"}, GET /props with
default_generation_settings.n_ctx, GET /v1/models without max_model_len,
and POST /v1/chat/completions streaming chunks whose last one carries
"usage" and a "timings" object WITHOUT "cache_n" (older builds): prompt_n is
1 when the same prompt was seen before (its slot cache held the rest), else
every prompt token. Its tokenizer: one token per byte, plus one (BOS) with
add_special; its template: "<|user|>" + content + "<|assistant|>" per
message; with a second argument "nousage", no usage and no timings at all.
Prints "listening on http://127.0.0.1:PORT" (flushed); standard
library only, loopback only; ends when the test kills it.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

N_CTX = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
# "nousage": the last chunk has neither usage nor timings (a server, or a
# proxy, that sends none): the client must count the answer itself.
NO_USAGE = len(sys.argv) > 2 and sys.argv[2] == "nousage"
seen = set()
lock = threading.Lock()


def render(messages):
    return "".join("<|%s|>%s" % (m.get("role", "user"), m.get("content", "")) for m in messages) + \
        "<|assistant|>"


def count(text, special):
    return len(text.encode()) + (1 if special else 0)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "tiny.gguf", "object": "model"}]})
        elif self.path == "/props":
            self.reply(200, {"default_generation_settings": {"n_ctx": N_CTX}, "total_slots": 4})
        else:
            self.reply(404, {"error": {"code": 404, "message": "File Not Found"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        try:
            req = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            self.reply(400, {"error": {"message": "bad json"}})
            return
        if self.path == "/tokenize":
            k = count(req["content"], req.get("add_special", False)) if "content" in req else 0
            self.reply(200, {"tokens": list(range(k))})
        elif self.path == "/apply-template":
            self.reply(200, {"prompt": render(req["messages"])})
        elif self.path == "/v1/chat/completions":
            self.stream(req)
        else:
            self.reply(404, {"error": {"code": 404, "message": "File Not Found"}})

    def stream(self, req):
        prompt = render(req["messages"])
        n_prompt = count(prompt, True)
        max_tokens = int(req.get("max_tokens") or 4)
        if n_prompt + max_tokens > N_CTX:
            self.reply(400, {"error": {"code": 400, "message": "the request exceeds the available context size"}})
            return
        with lock:
            hit = prompt in seen
            seen.add(prompt)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "tiny.gguf",
                "created": 1}

        def send(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()
        for i in range(max_tokens):
            send(dict(base, choices=[{"index": 0, "delta": {"content": " w%d" % i}, "finish_reason": None}]))
        if NO_USAGE:
            send(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "length"}]))
        else:
            send(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "length"}],
                      usage={"completion_tokens": max_tokens, "prompt_tokens": n_prompt,
                             "total_tokens": n_prompt + max_tokens},
                      timings={"prompt_n": 1 if hit else n_prompt, "prompt_ms": 1.0,
                               "predicted_n": max_tokens, "predicted_ms": 1.0}))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
