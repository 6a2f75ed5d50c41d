#!/usr/bin/env python3
"""Tokenizer test input: a small Python module."""
from __future__ import annotations

import dataclasses
from typing import Iterable


@dataclasses.dataclass(frozen=True)
class Sample:
    prompt: str
    max_tokens: int = 256
    temperature: float = 0.7


def percentile(xs: Iterable[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        raise ValueError("empty input")
    k = (len(s) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


if __name__ == "__main__":
    data = [i ** 2 / 3 for i in range(1_000)]
    print(f"p99={percentile(data, 99):.3f}  p50={percentile(data, 50):>10.2f}")
    lam = lambda x, *a, **kw: {**kw, "x": x}  # noqa: E731
    print(lam(1, 2, y=3), [x for x in "abc" if x != 'b'], {1, 2} | {3}, 7 // 2, 2 ** -1, a @ b)
