"""/api/v1/ops/fleet/skew: version skew within each NVLink domain, by the majority-version rule (operators only).
The operators' console shows the same: tests/portal/consoles/test_operator_console_reads_the_api.py."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.models import Node
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import VERSIONS, skewed_fleet, small_fleet

SKEW = "/api/v1/ops/fleet/skew"


def outliers(field: dict[str, Any]) -> list[tuple[str, str]]:
    return [(o["hostname"], o["value"]) for o in field["outliers"]]


@pytest.mark.parametrize("who", ["alice", "finance", "compliance"])
def test_only_operators_read_the_skew(api: Any, request: Any, db: Any, who: str) -> None:
    fleet_load(document=skewed_fleet(), actor=SYSTEM)
    assert_problem(api(request.getfixturevalue(who)).get(SKEW), 403, "permission_denied")
    assert api().get(SKEW).status_code == 401


def test_the_majority_sets_each_domains_norm_and_the_nodes_off_it_are_named(api: Any, operator: Any) -> None:
    fleet_load(document=skewed_fleet(), actor=SYSTEM)
    response = api(operator).get(SKEW)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["skewed"] == 2
    first, second, *rest = body["domains"]  # the domains with skew come first

    assert (first["hall"], first["nvlink_domain"], first["nodes"]) == ("eu-west-1a", "eu-west-1a/nvl-0", 3)
    driver, cuda = first["fields"]  # in the version set's order: driver, CUDA, NCCL, firmware
    assert (driver["field"], driver["values"], driver["norm"]) == (
        "driver",
        {"570.10.01": 1, VERSIONS["driver"]: 2},
        VERSIONS["driver"],  # two nodes of three, though the first node by hostname runs the other
    )
    assert outliers(driver) == [("euw1a-01", "570.10.01")]
    assert driver["outliers"][0]["id"] == Node.objects.get(hostname="euw1a-01").pk
    assert (cuda["field"], cuda["norm"], outliers(cuda)) == ("cuda", VERSIONS["cuda"], [("euw1a-02", "12.9")])

    assert (second["nvlink_domain"], second["nodes"]) == ("eu-west-1a/nvl-1", 2)
    [nccl] = second["fields"]
    assert nccl["values"] == {"2.26.2": 1, VERSIONS["nccl"]: 1}
    assert (nccl["norm"], outliers(nccl)) == (VERSIONS["nccl"], [("euw1a-05", "2.26.2")])  # a tie: the first node's

    assert [(d["nvlink_domain"], d["fields"]) for d in rest] == [
        ("eu-west-1b/nvl-0", []),
        ("us-east-1a/nvl-0", []),
    ]


def test_a_fleet_on_one_version_set_per_domain_has_no_skew(api: Any, operator: Any) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    body = api(operator).get(SKEW).json()
    assert body["skewed"] == 0
    assert [(d["nvlink_domain"], d["nodes"], d["fields"]) for d in body["domains"]] == [
        ("eu-west-1a/nvl-0", 2, []),
        ("eu-west-1a/nvl-1", 1, []),
        ("eu-west-1b/nvl-0", 1, []),
        ("us-east-1a/nvl-0", 1, []),
    ]


def test_without_a_fleet_there_is_nothing_to_compare(api: Any, operator: Any) -> None:
    assert api(operator).get(SKEW).json() == {"skewed": 0, "domains": []}
