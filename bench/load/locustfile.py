"""The customer API mix, for locust (``python -m bench.load`` runs it; never imported by Ladder or the tests: locust
patches the process with gevent).

Each simulated customer holds one API key (read and write) of one of the seeded tenants, read from the JSON file
``LADDER_LOAD_KEYS`` names, and does what a customer's scripts and dashboards do, weighted: reads its tenant, lists
and reads its allocations, their workload events and logs, usage, invoices and the upcoming invoice, prices and
offerings; places a one-GPU container on the simulated fleet and stops its oldest allocation once it holds a few.
A refusal for want of capacity (409) is an answer, not an error.

``LADDER_LOAD_JOURNAL`` names a file where every allocation placed (its id and the devices the answer named),
every stop answered, and every 5xx or failed connection (when it ended, and how long it took) is written as a JSON
line: the fault runner compares it with the database afterwards.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from locust import HttpUser, between, events, task

KEYS: list[str] = json.loads(open(os.environ["LADDER_LOAD_KEYS"]).read())["keys"]  # noqa: SIM115
JOURNAL = os.environ.get("LADDER_LOAD_JOURNAL")
GPU_MODEL = os.environ.get("LADDER_LOAD_GPU_MODEL", "H100-SXM-80GB")
HELD = 3  # allocations a customer keeps before stopping its oldest
_lock = threading.Lock()
_journal = open(JOURNAL, "a", buffering=1) if JOURNAL else None  # noqa: SIM115 - open for the run


def note(record: dict[str, Any]) -> None:
    if _journal is None:
        return
    with _lock:
        _journal.write(json.dumps({"t": time.time(), **record}) + "\n")


@events.request.add_listener
def _server_errors(
    request_type: str,
    name: str,
    response_time: float,
    response: Any,
    exception: BaseException | None,
    **kwargs: Any,
) -> None:
    status = getattr(response, "status_code", 0) or 0
    if (exception is not None and not status) or status >= 500:
        error = repr(exception)[:200] if exception else ""
        note({"kind": "error", "name": name, "status": status, "ms": response_time, "error": error})


class Customer(HttpUser):
    wait_time = between(0.05, 0.3)

    def on_start(self) -> None:
        self.key = random.choice(KEYS)
        self.client.headers["Authorization"] = f"Bearer {self.key}"
        self.mine: list[int] = []

    def _get(self, path: str, name: str, **params: Any) -> Any:
        with self.client.get(path, params=params or None, name=name, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}")
                return None
            return response.json()

    @task(3)
    def tenant(self) -> None:
        self._get("/api/v1/tenant", "GET /tenant")

    @task(4)
    def allocations(self) -> None:
        self._get("/api/v1/allocations", "GET /allocations")

    @task(3)
    def allocation(self) -> None:
        if self.mine:
            self._get(f"/api/v1/allocations/{random.choice(self.mine)}", "GET /allocations/{id}")

    @task(1)
    def workload_events(self) -> None:
        if self.mine:
            self._get(f"/api/v1/allocations/{random.choice(self.mine)}/events", "GET /allocations/{id}/events")

    @task(1)
    def workload_logs(self) -> None:
        if self.mine:
            self._get(f"/api/v1/allocations/{random.choice(self.mine)}/logs", "GET /allocations/{id}/logs", tail=20)

    @task(2)
    def usage(self) -> None:
        since = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0).isoformat()
        self._get("/api/v1/usage", "GET /usage", **{"from": since, "granularity": "hour"})

    @task(1)
    def invoices(self) -> None:
        self._get("/api/v1/invoices", "GET /invoices")

    @task(1)
    def upcoming(self) -> None:
        self._get("/api/v1/invoices/upcoming", "GET /invoices/upcoming")

    @task(1)
    def prices(self) -> None:
        self._get("/api/v1/prices", "GET /prices")

    @task(1)
    def offerings(self) -> None:
        self._get("/api/v1/offerings", "GET /offerings")

    @task(2)
    def place(self) -> None:
        body = {"name": f"load-{random.getrandbits(32):08x}", "rung": "container", "gpu_model": GPU_MODEL, "gpus": 1}
        with self.client.post("/api/v1/allocations", json=body, name="POST /allocations", catch_response=True) as r:
            if r.status_code == 201:
                answer = r.json()
                self.mine.append(answer["id"])
                devices = sorted([d["node"], d["gpu_index"]] for d in answer["devices"])
                note({"kind": "placed", "id": answer["id"], "devices": devices})
                r.success()
            elif r.status_code == 409:  # no capacity for it now: a refusal, answered
                r.success()
            else:
                r.failure(f"{r.status_code}")
        if len(self.mine) > HELD:
            self.release_oldest()

    def release_oldest(self) -> None:
        target = self.mine[0]
        with self.client.delete(
            f"/api/v1/allocations/{target}", name="DELETE /allocations/{id}", catch_response=True
        ) as r:
            if r.status_code == 200:
                self.mine.pop(0)
                note({"kind": "stopped", "id": target, "state": r.json()["state"]})
                r.success()
            else:
                r.failure(f"{r.status_code}")
