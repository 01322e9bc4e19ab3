"""What both compliance benchmarks measure with: a call timed after a garbage collection, a rate per second, and
rows printed as a Markdown table (readable as text and pasteable into docs/benchmarks.md)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

Row = dict[str, object]


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    began = time.perf_counter()
    result = run()
    return result, time.perf_counter() - began


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}"


def table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows])
