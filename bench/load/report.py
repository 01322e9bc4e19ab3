"""Reading locust's ``--csv`` output: throughput, p50/p99 and errors per endpoint (pure: file text in, rows out).

``<prefix>_stats.csv`` holds a row per endpoint (``Type``, ``Name``, ``Request Count``, ``Failure Count``,
``Requests/s``, percentiles ``50%`` … ``100%`` in ms) and a last row ``Aggregated``; ``<prefix>_failures.csv`` a row
per distinct failure (``Method``, ``Name``, ``Error``, ``Occurrences``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    name: str
    requests: int
    failures: int
    per_second: float
    p50_ms: float
    p99_ms: float

    @property
    def error_rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0


def _number(text: str) -> float:
    return float(text) if text not in ("", "N/A") else 0.0


def endpoints(stats_csv: str) -> list[Endpoint]:
    """Every row of the stats file, the ``Aggregated`` one last."""
    rows = []
    for row in csv.DictReader(io.StringIO(stats_csv)):
        rows.append(
            Endpoint(
                name=row["Name"],
                requests=int(row["Request Count"]),
                failures=int(row["Failure Count"]),
                per_second=_number(row["Requests/s"]),
                p50_ms=_number(row["50%"]),
                p99_ms=_number(row["99%"]),
            )
        )
    return rows


def failures(failures_csv: str) -> list[tuple[str, str, int]]:
    """(endpoint, error, occurrences), most frequent first."""
    found = [
        (row["Name"], row["Error"], int(row["Occurrences"]))  # the locustfile names requests "<METHOD> <path>"
        for row in csv.DictReader(io.StringIO(failures_csv))
    ]
    return sorted(found, key=lambda f: -f[2])


def table(rows: list[Endpoint]) -> str:
    """The figures as a fixed-width table."""
    width = max([len(r.name) for r in rows] + [8])
    lines = [f"{'endpoint':<{width}}  {'requests':>8}  {'req/s':>7}  {'p50 ms':>7}  {'p99 ms':>7}  {'errors':>6}"]
    for r in rows:
        lines.append(
            f"{r.name:<{width}}  {r.requests:>8}  {r.per_second:>7.1f}  {r.p50_ms:>7.0f}  {r.p99_ms:>7.0f}  "
            f"{r.failures:>6}"
        )
    return "\n".join(lines)
