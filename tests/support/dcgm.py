"""The simulated fleet's dcgm-exporter replayed into a real Prometheus: what a node reported at each of some past
instants, one instant a scrape, each sample stamped with its instant (the exposition format's timestamp), so a test
can give Prometheus hours of history in seconds. The suite's Prometheus takes samples up to a day old
(``out_of_order_time_window``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.db import connection

from provisioning.domain.gpu_metrics import exposition
from provisioning.models import Node
from provisioning.simulated_exporter import node_readings
from tests.support.prometheus import Prometheus


class Exposition:
    """An HTTP server on a free port of 127.0.0.1 answering every GET with ``text()`` in Prometheus's text format,
    as an exporter does (``url``); ``close`` stops it."""

    def __init__(self, text: Callable[[], str]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Replay(Exposition):
    """Serves a node's exposition as it was at each instant, one instant a scrape, stamped with it (the last one
    again once they are all served)."""

    def __init__(self, hostname: str, instants: list[datetime]) -> None:
        self.hostname, self.instants, self.served = hostname, instants, 0
        super().__init__(self._next)

    def _next(self) -> str:
        at = self.instants[min(self.served, len(self.instants) - 1)]
        try:
            node = Node.objects.select_related("gpu_model").get(hostname=self.hostname)
            text = exposition(node_readings(node, now=at), at_ms=int(at.timestamp() * 1000))
        finally:
            connection.close()  # this server's threads are not Django's: nothing closes their connection
        self.served += 1
        return text

    def fed(self, prometheus: Prometheus, name: str) -> None:
        """Wait until every instant was served, and Prometheus scraped once more."""
        while self.served < len(self.instants) + 1:
            threading.Event().wait(0.2)
        prometheus.scraped(name)


def replay_hosts(prometheus: Prometheus, made: list[Replay], hosts: list[str], instants: list[datetime]) -> None:
    """Replay each host's exporter over ``instants`` into ``prometheus`` (targets ``replay-<host>``), and wait
    until all of it is in."""
    for host in hosts:
        replay = Replay(host, instants)
        made.append(replay)
        prometheus.scrape(f"replay-{host}", replay.url)
    for replay in made:
        replay.fed(prometheus, f"replay-{replay.hostname}")
