#!/usr/bin/env python3
"""A small OpenAI-compatible streaming server over a randomly initialised
model of the DeepSeek-V3 shape, shrunk to a few GB (bench/gpu/README.md).

Plain PyTorch and aiohttp, no model library: the point is an inference
server whose every decode step is known, so that infermeter's NVML figures,
tokens per joule and roofline can be checked against it on a real GPU.

The model (shapes as in DeepSeek-V3's config.json, made smaller):
  - MLA attention: queries through a low-rank q_a/q_b pair; keys and values
    compressed into a kv_lora_rank latent plus a decoupled RoPE key, which is
    all the KV cache holds; decode attends in the latent space (W_UK absorbed
    into the query, W_UV applied after the weighted sum: DeepSeek-V2 paper,
    section 2.1.2);
  - the first dense_layers layers have a dense SwiGLU FFN, the rest a MoE FFN:
    a softmax router picks top_k of routed_experts experts per token,
    plus shared_experts always-on experts;
  - a KV cache preallocated for --slots sequences of --max-ctx tokens.

Scheduling: continuous batching. One engine thread runs steps: the waiting
requests that fit (a free slot, the prefill token budget) are prefilled
together in one step; then every running sequence takes one decode step
together. Tokens stream to the clients as SSE in the OpenAI chunk shape.

Step log (--step-log FILE, JSONL, one line per step, flushed per line):
  {"kind": "clock", "mono": s, "wall": s}  first line: the two clocks at
      one instant (time.monotonic() is CLOCK_MONOTONIC, as infermeter's);
  {"kind": "prefill"|"decode", "t0", "t1" (monotonic s, t1 after the
      device synchronised), "batch" (sequences), "tokens" (new tokens
      computed), "ctx_tokens" (context tokens read by attention),
      "experts_hit" (distinct routed experts per MoE layer, summed over
      layers), "weight_bytes" (weights the step must read: every dense
      weight once, only the routed experts some token was sent to, the
      embedding rows of the step's tokens, the whole LM head),
      "kv_read_bytes", "kv_write_bytes", "bytes" (their sum)}.
The bytes are those the step must move at the least, not what this simple
implementation moves (it pads the decode batch's context to the longest).
"""
import argparse
import asyncio
import json
import math
import os
import queue
import re
import sys
import threading
import time
import uuid
import zlib

import torch
import torch.nn.functional as F
from aiohttp import web

# Shapes. DeepSeek-V3 (config.json of deepseek-ai/DeepSeek-V3): vocab 129280,
# hidden 7168, 61 layers of which 3 dense, 128 heads, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, 256 routed experts
# top-8, 1 shared, moe_intermediate 2048, dense intermediate 18432.
SIZES = {
    # About 2.4e9 parameters, 4.9 GB in bf16: "a few GB" on an H200.
    "small": dict(vocab=16384, hidden=2048, layers=12, dense_layers=1, heads=16,
                  q_lora_rank=768, kv_lora_rank=512, qk_nope_head_dim=128,
                  qk_rope_head_dim=64, v_head_dim=128, routed_experts=32, top_k=4,
                  shared_experts=1, moe_intermediate=1024, dense_intermediate=4608),
    # A few million parameters: runs on a CPU in the smoke test.
    "toy": dict(vocab=2048, hidden=128, layers=3, dense_layers=1, heads=4,
                q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16, routed_experts=8, top_k=2,
                shared_experts=1, moe_intermediate=64, dense_intermediate=256),
}


# ---------------------------------------------------------------- model


class Shape:
    def __init__(self, d):
        self.__dict__.update(d)
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        self.kv_entry = self.kv_lora_rank + self.qk_rope_head_dim  # per token, per layer
        self.moe_layers = self.layers - self.dense_layers

    # Parameter counts, by the same arithmetic as the tensors built below
    # (Model checks that they agree).
    def attn_params(self):
        h, n = self.hidden, self.heads
        return (h * self.q_lora_rank + self.q_lora_rank
                + self.q_lora_rank * n * self.qk_head_dim
                + h * self.kv_entry + self.kv_lora_rank
                + self.kv_lora_rank * n * (self.qk_nope_head_dim + self.v_head_dim)
                + n * self.v_head_dim * h
                + 2 * h)  # the two RMSNorm weights of the block

    def expert_params(self):
        return 3 * self.hidden * self.moe_intermediate

    def dense_ffn_params(self):
        return 3 * self.hidden * self.dense_intermediate

    def moe_fixed_params(self):  # router and shared experts
        return self.hidden * self.routed_experts + self.shared_experts * self.expert_params()

    def total_params(self):
        return (2 * self.vocab * self.hidden + self.hidden
                + self.layers * self.attn_params()
                + self.dense_layers * self.dense_ffn_params()
                + self.moe_layers * (self.moe_fixed_params()
                                     + self.routed_experts * self.expert_params()))

    def active_params(self):
        return self.total_params() - self.moe_layers * (
            self.routed_experts - self.top_k) * self.expert_params()


def rms_norm(x, w, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_angles(pos, d, base=10000.0):
    """cos and sin of the rotary angles at integer positions pos, for a
    rotated width d: [len(pos), d/2] each (computed once per step)."""
    inv = 1.0 / (base ** (torch.arange(0, d, 2, device=pos.device, dtype=torch.float32) / d))
    ang = pos.float()[:, None] * inv
    return ang.cos(), ang.sin()


def rope(x, cs):
    """Rotary embedding of the last dimension of x (rotate-half form); x is
    [t, d] or [t, heads, d], cs from rope_angles."""
    cos, sin = cs
    if x.dim() == 3:
        cos, sin = cos[:, None, :], sin[:, None, :]
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2].float(), x[..., d // 2:].float()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(x.dtype)


class Model:
    def __init__(self, shape, slots, max_ctx, device, dtype, seed):
        s = self.s = shape
        self.device, self.dtype = device, dtype
        self.slots, self.max_ctx = slots, max_ctx
        g = torch.Generator(device=device)
        g.manual_seed(seed)

        def w(*dims, fan_in=None):
            fi = fan_in if fan_in is not None else dims[0]
            t = torch.empty(*dims, device=device, dtype=dtype)
            t.normal_(0.0, 1.0 / math.sqrt(fi), generator=g)
            return t

        def ones(n):
            return torch.ones(n, device=device, dtype=dtype)

        h, n = s.hidden, s.heads
        self.embed = w(s.vocab, h, fan_in=1)
        self.final_norm = ones(h)
        self.head = w(h, s.vocab)
        self.layers = []
        for i in range(s.layers):
            L = dict(
                attn_norm=ones(h), ffn_norm=ones(h),
                q_a=w(h, s.q_lora_rank), q_norm=ones(s.q_lora_rank),
                q_b=w(s.q_lora_rank, n * s.qk_head_dim),
                kv_a=w(h, s.kv_entry), kv_norm=ones(s.kv_lora_rank),
                # W_UK and W_UV side by side: [kv_lora_rank, heads, nope + v].
                kv_b=w(s.kv_lora_rank, n, s.qk_nope_head_dim + s.v_head_dim,
                       fan_in=s.kv_lora_rank),
                o=w(n * s.v_head_dim, h))
            if i < s.dense_layers:
                L["w13"] = w(h, 2 * s.dense_intermediate)
                L["w2"] = w(s.dense_intermediate, h)
            else:
                e, m = s.routed_experts, s.moe_intermediate
                L["router"] = w(h, e)
                L["ew13"] = w(e, h, 2 * m, fan_in=h)  # gate and up, fused
                L["ew2"] = w(e, m, h, fan_in=m)
                L["sw13"] = w(h, 2 * m * s.shared_experts)
                L["sw2"] = w(m * s.shared_experts, h)
            self.layers.append(L)
        # The latent KV cache: [layers, slots, max_ctx, kv_lora_rank + rope].
        self.cache = torch.zeros(s.layers, slots, max_ctx, s.kv_entry, device=device, dtype=dtype)

        built = self.embed.numel() + self.final_norm.numel() + self.head.numel() + sum(
            t.numel() for L in self.layers for t in L.values())
        if built != s.total_params():
            raise SystemExit("parameter count %d != the shape's arithmetic %d" %
                             (built, s.total_params()))
        self.elt = torch.empty((), dtype=dtype).element_size()
        # Bytes of the weights every step reads whatever the routing.
        self.fixed_weight_bytes = self.elt * (
            self.final_norm.numel() + self.head.numel()
            + s.layers * s.attn_params() + s.dense_layers * s.dense_ffn_params()
            + s.moe_layers * s.moe_fixed_params())
        self.expert_bytes = self.elt * s.expert_params()
        self.kv_token_bytes = self.elt * s.layers * s.kv_entry  # one token, all layers

    # -- attention

    def _attn(self, L, li, x, plan):
        s = self.s
        n = s.heads
        q = rms_norm(x @ L["q_a"], L["q_norm"]) @ L["q_b"]
        q = q.view(-1, n, s.qk_head_dim)
        q_nope, q_rope = q[..., : s.qk_nope_head_dim], q[..., s.qk_nope_head_dim:]
        kv = x @ L["kv_a"]
        c_kv = rms_norm(kv[:, : s.kv_lora_rank], L["kv_norm"])
        pos = plan["pos"]
        k_rope = rope(kv[:, s.kv_lora_rank:], plan["rope"])
        q_rope = rope(q_rope, plan["rope"])
        cache = self.cache[li]
        cache[plan["slot"], pos] = torch.cat([c_kv, k_rope], -1)
        w_uk = L["kv_b"][..., : s.qk_nope_head_dim]  # [r, n, nope]
        w_uv = L["kv_b"][..., s.qk_nope_head_dim:]   # [r, n, v]
        # Absorb W_UK into the query: q_lat[t, h, r] = sum_d q_nope[t,h,d] w_uk[r,h,d].
        q_lat = torch.einsum("thd,rhd->thr", q_nope, w_uk)
        scale = 1.0 / math.sqrt(s.qk_head_dim)
        r = s.kv_lora_rank
        if plan["kind"] == "decode":
            T = plan["max_len"]
            ctx = cache[plan["slot"], :T]  # [b, T, r + rope]
            sc = (torch.einsum("bhr,btr->bht", q_lat, ctx[..., :r])
                  + torch.einsum("bhd,btd->bht", q_rope, ctx[..., r:])) * scale
            sc = sc.float().masked_fill(plan["mask"][:, None, :], float("-inf"))
            p = sc.softmax(-1).to(x.dtype)
            o_lat = torch.einsum("bht,btr->bhr", p, ctx[..., :r])
        else:  # prefill: one sequence after another, causal
            outs = []
            for (slot, a, b, start) in plan["seqs"]:
                T = start + (b - a)
                ctx = cache[slot, :T]  # [T, r + rope]
                sc = (torch.einsum("thr,kr->htk", q_lat[a:b], ctx[:, :r])
                      + torch.einsum("thd,kd->htk", q_rope[a:b], ctx[:, r:])) * scale
                qpos = torch.arange(start, T, device=x.device)
                kpos = torch.arange(T, device=x.device)
                sc = sc.float().masked_fill(kpos[None, None, :] > qpos[None, :, None],
                                            float("-inf"))
                p = sc.softmax(-1).to(x.dtype)
                outs.append(torch.einsum("htk,kr->thr", p, ctx[:, :r]))
            o_lat = torch.cat(outs, 0)
        o = torch.einsum("thr,rhd->thd", o_lat, w_uv).reshape(x.shape[0], -1)
        return o @ L["o"]

    # -- feed-forward

    @staticmethod
    def _swiglu(x, w13, w2):
        gu = x @ w13
        m = gu.shape[-1] // 2
        return (F.silu(gu[..., :m]) * gu[..., m:]) @ w2

    def _moe(self, L, x):
        """Routed experts as two batched products over every expert, each
        expert's tokens packed into rows 0..count-1 of its slice (no Python
        loop over experts, no weight copy). Experts no token chose get only
        padding rows: the implementation reads their weights, the step log
        counts only the experts hit (module docstring). Returns the output
        and a 0-d tensor: the distinct experts hit."""
        s = self.s
        n, e, k = x.shape[0], s.routed_experts, s.top_k
        probs = (x @ L["router"]).float().softmax(-1)
        wts, idx = probs.topk(k, dim=-1)  # [n, k]
        wts = (wts / wts.sum(-1, keepdim=True)).to(x.dtype)
        out = self._swiglu(x, L["sw13"], L["sw2"])
        flat = idx.reshape(-1)
        order = flat.argsort()
        sorted_e = flat[order]
        counts = torch.bincount(flat, minlength=e)
        starts = counts.cumsum(0) - counts
        row = torch.arange(n * k, device=x.device) - starts[sorted_e]
        tok = order // k
        # A token picks an expert at most once, so no expert has more than
        # n rows; past 256 tokens (prefill) the largest count is read back.
        cap = n if n <= 256 else int(counts.max())
        xp = x.new_zeros(e, cap, x.shape[1])
        xp[sorted_e, row] = x[tok]
        gu = torch.bmm(xp, L["ew13"])
        m = gu.shape[-1] // 2
        y = torch.bmm(F.silu(gu[..., :m]) * gu[..., m:], L["ew2"])
        out.index_add_(0, tok, y[sorted_e, row] * wts.reshape(-1)[order, None])
        return out, (counts > 0).sum()

    # -- one step

    @torch.no_grad()
    def forward(self, tokens, plan):
        """tokens: [t] ids; plan: positions, slots and the attention layout.
        Returns the logits of plan["logit_rows"] and the distinct routed
        experts hit, summed over the MoE layers."""
        x = self.embed[tokens]
        plan["rope"] = rope_angles(plan["pos"], self.s.qk_rope_head_dim)
        hit = torch.zeros((), dtype=torch.long, device=tokens.device)
        for li, L in enumerate(self.layers):
            x = x + self._attn(L, li, rms_norm(x, L["attn_norm"]), plan)
            y = rms_norm(x, L["ffn_norm"])
            if "w13" in L:
                x = x + self._swiglu(y, L["w13"], L["w2"])
            else:
                m, e = self._moe(L, y)
                x = x + m
                hit += e
        x = rms_norm(x[plan["logit_rows"]], self.final_norm)
        return (x @ self.head).float(), int(hit)

    def step_bytes(self, n_tokens, experts_hit, ctx_read, kv_written):
        wb = self.fixed_weight_bytes + experts_hit * self.expert_bytes + \
            n_tokens * self.s.hidden * self.elt
        kr = ctx_read * self.kv_token_bytes
        kw = kv_written * self.kv_token_bytes
        return wb, kr, kw


def self_check(model):
    """The cached decode path computes the same function as a prefill of the
    whole sequence: prefill p, decode t, then prefill p + [t] from scratch in
    another slot; the two last-token logits must agree. And the batched MoE
    layer agrees with a token-by-token, expert-by-expert sum, and counts the
    experts hit right. Returns the larger relative difference."""
    dev = model.device
    p = [5, 17, 3, 99, 42, 7, 1, 64][: model.max_ctx - 2]

    def prefill(slot, toks):
        n = len(toks)
        plan = dict(kind="prefill", pos=torch.arange(n, device=dev),
                    slot=torch.full((n,), slot, device=dev), seqs=[(slot, 0, n, 0)],
                    logit_rows=torch.tensor([n - 1], device=dev))
        return model.forward(torch.tensor(toks, device=dev), plan)[0][0]

    t = int(prefill(0, p).argmax())
    n = len(p) + 1
    plan = dict(kind="decode", pos=torch.tensor([n - 1], device=dev),
                slot=torch.tensor([0], device=dev), max_len=n,
                mask=torch.zeros(1, n, dtype=torch.bool, device=dev),
                logit_rows=torch.tensor([0], device=dev))
    dec = model.forward(torch.tensor([t], device=dev), plan)[0][0]
    ref = prefill(1, p + [t])
    err = float((dec - ref).norm() / ref.norm())
    # The batched MoE against one token at a time, one expert at a time.
    L = model.layers[model.s.dense_layers]
    x = torch.randn(7, model.s.hidden, device=dev).to(model.dtype)
    got, hit = model._moe(L, x)
    probs = (x @ L["router"]).float().softmax(-1)
    want = model._swiglu(x, L["sw13"], L["sw2"])
    chosen = set()
    for i in range(x.shape[0]):
        w, ix = probs[i].topk(model.s.top_k)
        w = (w / w.sum()).to(x.dtype)
        for wj, j in zip(w, ix.tolist()):
            chosen.add(j)
            want[i] += wj * model._swiglu(x[i:i + 1], L["ew13"][j], L["ew2"][j])[0]
    if int(hit) != len(chosen):
        return float("inf")
    return max(err, float((got - want).norm() / want.norm()))


def sample(logits, temps, gen):
    greedy = logits.argmax(-1)
    if not any(t > 0 for t in temps):
        return greedy.tolist()
    t = torch.tensor([max(x, 1e-5) for x in temps], device=logits.device)[:, None]
    drawn = torch.multinomial((logits / t).softmax(-1), 1, generator=gen)[:, 0]
    keep = torch.tensor([x > 0 for x in temps], device=logits.device)
    return torch.where(keep, drawn, greedy).tolist()


# ---------------------------------------------------------------- text

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
SYLL = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu", "he", "ji", "bo", "fe"]


def tokenize(text, vocab):
    return [zlib.crc32(m.group(0).encode()) % vocab for m in WORD.finditer(text)]


def detok(tid):
    # A pronounceable word per id: base-16 digits as syllables.
    parts, v = [], tid + 1
    while v:
        parts.append(SYLL[v % 16])
        v //= 16
    return " " + "".join(parts)


def chat_text(messages):
    out = []
    for m in messages:
        c = m.get("content", "")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        out.append("%s: %s" % (m.get("role", "user"), c))
    out.append("assistant:")
    return "\n".join(out)


# ---------------------------------------------------------------- engine


class Req:
    def __init__(self, prompt, max_tokens, temperature, loop):
        self.prompt, self.max_tokens, self.temperature = prompt, max_tokens, temperature
        self.loop = loop
        self.q = asyncio.Queue()
        self.slot = -1
        self.generated = 0
        self.last = None
        self.cancelled = False

    def emit(self, item):
        self.loop.call_soon_threadsafe(self.q.put_nowait, item)


class Engine(threading.Thread):
    def __init__(self, model, log_path, prefill_budget, seed):
        super().__init__(daemon=True)
        self.m = model
        self.inbox = queue.Queue()
        self.waiting = []
        self.running = []
        self.free = list(range(model.slots))[::-1]
        self.budget = prefill_budget
        self.gen = torch.Generator(device=model.device)
        self.gen.manual_seed(seed + 1)
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.steps = 0
        self._log({"kind": "clock", "mono": time.monotonic(), "wall": time.time()})

    def _log(self, rec):
        if self.log:
            self.log.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def submit(self, r):
        self.inbox.put(r)

    def _sync(self):
        if self.m.device.type == "cuda":
            torch.cuda.synchronize(self.m.device)

    def _finish(self, r, reason):
        self.running.remove(r)
        self.free.append(r.slot)
        r.emit(("end", reason))

    def _admit(self):
        block = not self.running and not self.waiting
        while True:
            try:
                r = self.inbox.get(timeout=0.05) if block else self.inbox.get_nowait()
            except queue.Empty:
                break
            self.waiting.append(r)
            block = False
        batch, used = [], 0
        while self.waiting and self.free:
            r = self.waiting[0]
            if r.cancelled:
                self.waiting.pop(0)
                continue
            if batch and used + len(r.prompt) > self.budget:
                break
            self.waiting.pop(0)
            r.slot = self.free.pop()
            batch.append(r)
            used += len(r.prompt)
        return batch

    def _prefill(self, batch):
        dev = self.m.device
        toks, pos, slots, seqs, rows = [], [], [], [], []
        for r in batch:
            a = len(toks)
            toks += r.prompt
            pos += range(len(r.prompt))
            slots += [r.slot] * len(r.prompt)
            seqs.append((r.slot, a, len(toks), 0))
            rows.append(len(toks) - 1)
        plan = dict(kind="prefill", pos=torch.tensor(pos, device=dev),
                    slot=torch.tensor(slots, device=dev), seqs=seqs,
                    logit_rows=torch.tensor(rows, device=dev))
        t0 = time.monotonic()
        logits, hit = self.m.forward(torch.tensor(toks, device=dev), plan)
        nxt = sample(logits, [r.temperature for r in batch], self.gen)  # synchronises
        self._sync()
        t1 = time.monotonic()
        # Causal attention over the prompt: each token reads the context
        # before it; at the least the whole prompt's latents once per layer.
        wb, kr, kw = self.m.step_bytes(len(toks), hit, len(toks), len(toks))
        self._log(dict(kind="prefill", t0=t0, t1=t1, batch=len(batch), tokens=len(toks),
                       ctx_tokens=len(toks), experts_hit=hit, weight_bytes=wb,
                       kv_read_bytes=kr, kv_write_bytes=kw, bytes=wb + kr + kw))
        for r, t in zip(batch, nxt):
            self.running.append(r)
            self._token(r, t, len(r.prompt))

    def _token(self, r, t, ctx_len):
        r.generated += 1
        r.last = t
        r.ctx = ctx_len  # tokens in the cache before t
        r.emit(("tok", t))
        if r.generated >= r.max_tokens:
            self._finish(r, "length")

    def _decode(self):
        for r in [r for r in self.running if r.cancelled]:
            self._finish(r, "cancelled")
        batch = list(self.running)
        if not batch:
            return
        dev = self.m.device
        lens = [r.ctx + 1 for r in batch]  # context after writing this token
        T = max(lens)
        lt = torch.tensor(lens, device=dev)
        plan = dict(kind="decode", pos=lt - 1,
                    slot=torch.tensor([r.slot for r in batch], device=dev), max_len=T,
                    mask=torch.arange(T, device=dev)[None, :] >= lt[:, None],
                    logit_rows=torch.arange(len(batch), device=dev))
        t0 = time.monotonic()
        logits, hit = self.m.forward(torch.tensor([r.last for r in batch], device=dev), plan)
        nxt = sample(logits, [r.temperature for r in batch], self.gen)
        self._sync()
        t1 = time.monotonic()
        ctx = sum(lens)
        wb, kr, kw = self.m.step_bytes(len(batch), hit, ctx, len(batch))
        self._log(dict(kind="decode", t0=t0, t1=t1, batch=len(batch), tokens=len(batch),
                       ctx_tokens=ctx, experts_hit=hit, weight_bytes=wb,
                       kv_read_bytes=kr, kv_write_bytes=kw, bytes=wb + kr + kw))
        for r, t, n in zip(batch, nxt, lens):
            self._token(r, t, n)

    def run(self):
        while True:
            try:
                batch = self._admit()
                if batch:
                    self._prefill(batch)
                self._decode()
                self.steps += 1
            except Exception as e:  # keep serving; fail the requests in flight
                print("engine step failed: %r" % (e,), file=sys.stderr, flush=True)
                for r in list(self.running):
                    self._finish(r, "error")


# ---------------------------------------------------------------- HTTP


class App:
    def __init__(self, engine, name, max_ctx, vocab):
        self.engine, self.name, self.max_ctx, self.vocab = engine, name, max_ctx, vocab
        self.created = int(time.time())

    async def health(self, _req):
        return web.Response(text="ok\n")

    async def models(self, _req):
        return web.json_response({"object": "list", "data": [{
            "id": self.name, "object": "model", "created": self.created,
            "owned_by": "infermeter-bench", "max_model_len": self.max_ctx}]})

    @staticmethod
    def _error(status, msg):
        return web.json_response({"error": {"message": msg, "type": "invalid_request_error",
                                            "code": status}}, status=status)

    async def completions(self, req):
        return await self._serve(req, chat=False)

    async def chat(self, req):
        return await self._serve(req, chat=True)

    async def _serve(self, req, chat):
        try:
            body = await req.json()
        except Exception:
            return self._error(400, "body is not JSON")
        if chat:
            msgs = body.get("messages")
            if not isinstance(msgs, list):
                return self._error(400, "messages must be a list")
            text = chat_text(msgs)
        else:
            text = body.get("prompt", "")
            if isinstance(text, list):
                text = " ".join(str(p) for p in text)
            if not isinstance(text, str):
                return self._error(400, "prompt must be a string")
        prompt = tokenize(text, self.vocab) or [0]
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens")) or 16
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return self._error(400, "max_tokens must be a positive integer")
        if len(prompt) + max_tokens > self.max_ctx:
            return self._error(400, "prompt (%d tokens) + max_tokens (%d) exceed the "
                                    "context of %d" % (len(prompt), max_tokens, self.max_ctx))
        temp = body.get("temperature", 0.0)
        temp = float(temp) if isinstance(temp, (int, float)) else 0.0
        r = Req(prompt, max_tokens, temp, asyncio.get_running_loop())
        self.engine.submit(r)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        created = int(time.time())
        usage = lambda n: {"prompt_tokens": len(prompt), "completion_tokens": n,  # noqa: E731
                           "total_tokens": len(prompt) + n}
        if not body.get("stream"):
            pieces, reason = [], "length"
            while True:
                kind, v = await r.q.get()
                if kind == "tok":
                    pieces.append(detok(v))
                else:
                    reason = v
                    break
            text_out = "".join(pieces)
            choice = ({"index": 0, "message": {"role": "assistant", "content": text_out},
                       "finish_reason": reason} if chat else
                      {"index": 0, "text": text_out, "logprobs": None, "finish_reason": reason})
            return web.json_response({
                "id": rid, "object": "chat.completion" if chat else "text_completion",
                "created": created, "model": self.name, "choices": [choice],
                "usage": usage(len(pieces))})
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(req)
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(piece, reason=None, first=False):
            if chat:
                delta = {"role": "assistant", "content": piece} if first else \
                    ({"content": piece} if piece else {})
                ch = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
            else:
                ch = {"index": 0, "text": piece, "logprobs": None, "finish_reason": reason}
            return {"id": rid, "object": obj, "created": created, "model": self.name,
                    "choices": [ch]}

        async def send(o):
            await resp.write(b"data: " + json.dumps(o, separators=(",", ":")).encode() + b"\n\n")

        n, reason = 0, "length"
        try:
            if chat:
                await send(chunk("", first=True))
            while True:
                kind, v = await r.q.get()
                if kind == "end":
                    reason = v
                    break
                n += 1
                await send(chunk(detok(v)))
            await send(chunk("", reason=reason))
            if want_usage:
                await send({"id": rid, "object": obj, "created": created, "model": self.name,
                            "choices": [], "usage": usage(n)})
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            # The client went away (infermeter aborts what is left after
            # --grace): free the slot, and no traceback for an ordinary event.
            r.cancelled = True
            return resp
        return resp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--toy", action="store_true", help="toy size (CPU smoke test)")
    ap.add_argument("--size", choices=sorted(SIZES), help="model size (default small, toy with --toy)")
    ap.add_argument("--slots", type=int, default=128, help="sequences in the KV cache")
    ap.add_argument("--max-ctx", type=int, default=2048, help="tokens per sequence")
    ap.add_argument("--prefill-budget", type=int, default=8192, help="prompt tokens per prefill step")
    ap.add_argument("--dtype", default=None, help="bfloat16 (default on cuda) or float32 (cpu)")
    ap.add_argument("--model-name", default="dsv3-shape-small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step-log", default=None, help="JSONL file of every step")
    ap.add_argument("--self-check", action="store_true",
                    help="check the cached decode against a full prefill, then exit")
    ap.add_argument("--write-model-config", default=None,
                    help="write infermeter's --model-config JSON for this shape, then exit")
    a = ap.parse_args()

    size = a.size or ("toy" if a.toy else "small")
    shape = Shape(SIZES[size])
    dev = torch.device(a.device)
    dtype = getattr(torch, a.dtype) if a.dtype else (
        torch.bfloat16 if dev.type == "cuda" else torch.float32)
    elt = torch.empty((), dtype=dtype).element_size()
    if a.write_model_config:
        desc = {"name": a.model_name, "layers": shape.layers, "dense_layers": shape.dense_layers,
                "hidden_size": shape.hidden, "attention": "MLA",
                "kv_lora_rank": shape.kv_lora_rank, "qk_rope_head_dim": shape.qk_rope_head_dim,
                "heads": shape.heads, "kv_heads": shape.heads, "head_dim": shape.v_head_dim,
                "routed_experts": shape.routed_experts, "shared_experts": shape.shared_experts,
                "top_k": shape.top_k, "expert_intermediate_size": shape.moe_intermediate,
                "weight_bytes": elt, "kv_bytes": elt,
                "total_params": shape.total_params(), "active_params": shape.active_params()}
        with open(a.write_model_config, "w") as f:
            json.dump(desc, f, indent=1)
            f.write("\n")
        return

    torch.set_grad_enabled(False)
    if dev.type == "cpu":
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t = time.monotonic()
    model = Model(shape, a.slots, a.max_ctx, dev, dtype, a.seed)
    if a.self_check:
        err = self_check(model)
        tol = 1e-4 if dtype == torch.float32 else 3e-2
        print("self-check: decode vs prefill logits, relative difference %.2e (limit %.0e)"
              % (err, tol), flush=True)
        sys.exit(0 if err <= tol else 1)
    engine = Engine(model, a.step_log, a.prefill_budget, a.seed)
    # Warm-up outside the log: one prefill and a few decode steps.
    log, engine.log = engine.log, None
    loop = asyncio.new_event_loop()
    warm = Req([1, 2, 3, 4], 4, 0.0, loop)
    engine.waiting.append(warm)
    engine._prefill(engine._admit())
    while engine.running:
        engine._decode()
    engine.log = log
    print("model %s: %.3g params, %.2f GB of weights, KV cache %.2f GB, ready in %.1f s"
          % (size, shape.total_params(), shape.total_params() * elt / 1e9,
             model.cache.numel() * elt / 1e9, time.monotonic() - t), flush=True)
    engine.start()

    app_state = App(engine, a.model_name, a.max_ctx, shape.vocab)
    app = web.Application(client_max_size=16 << 20)
    app.router.add_get("/health", app_state.health)
    app.router.add_get("/v1/models", app_state.models)
    app.router.add_post("/v1/completions", app_state.completions)
    app.router.add_post("/v1/chat/completions", app_state.chat)

    asyncio.set_event_loop(loop)
    web.run_app(app, host=a.host, port=a.port, print=None, access_log=None, loop=loop)


if __name__ == "__main__":
    main()
