"""Helpers for the consoles' tests: a generated fleet of 1,024 GPUs for the heatmap's measurements."""

from __future__ import annotations

from typing import Any

from tests.support.fleet_documents import node

NODES_PER_DOMAIN = 8


def fleet_of_1024_gpus() -> dict[str, Any]:
    """2 regions x 2 halls x 4 NVLink domains x 8 nodes x 8 GPUs."""
    regions = []
    for r, (code, jurisdiction) in enumerate([("eu-big", "EU"), ("us-big", "US")]):
        halls = []
        for h in range(2):
            hall = f"{code}-{h}"
            nodes = [
                node(f"{hall}-d{d}-n{n:02d}", f"{hall}/nvl-{d}") for d in range(4) for n in range(NODES_PER_DOMAIN)
            ]
            halls.append({"code": hall, "fenced_for": None, "nodes": nodes})
        regions.append({"code": code, "name": f"Region {r}", "jurisdiction": jurisdiction, "halls": halls})
    return {"regions": regions}
