"""The operators' console and the API read the fleet through the same selectors (provisioning.selectors): the
fragmentation figures now and after a defragmentation plan, and version skew by the majority-version rule, read
from both on one fleet, agree figure for figure."""

from __future__ import annotations

import re
from typing import Any

from provisioning.selectors import VERSION_FIELDS
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM
from tests.support.billing import place
from tests.support.consoles import signed_in
from tests.support.fleet_documents import VERSIONS, skewed_fleet, small_fleet

H100 = "H100-SXM-80GB"
FIGURES_ROW = re.compile(r"<tr>" + r"<td>([^<]*)</td>" * 7 + r"</tr>")
SKEWED_ROW = re.compile(
    r'<tr class="violation">\s*<td>([^<]*)</td><td>([^<]*)</td><td>(\d+)</td>\s*<td>(.*?)</td>\s*</tr>', re.DOTALL
)
SKEWED_FIELD = re.compile(r"<p><strong>([^<]+)</strong>: (.*?)\. Off the majority \(([^)]*)\): (.*?)</p>")
OUTLIER = re.compile(r'<a href="/console/operators/nodes/(\d+)">([^<]+)</a> \(([^)]*)\)')


def console_figures(text: str) -> list[dict[str, Any]]:
    """The rows of the page's fragmentation tables, as the API names each figure."""
    return [
        {
            "gpu_model": model,
            "hall": hall,
            "gpus": int(gpus),
            "free_gpus": int(free),
            "unallocated_gpus": float(unallocated),
            "stranded_mig_slices": int(stranded),
            "largest_gang_gpus": {d: int(n) for d, n in (pair.split(": ") for pair in gangs.split(", ") if pair)},
        }
        for model, hall, gpus, free, unallocated, stranded, gangs in FIGURES_ROW.findall(text)
    ]


def ask(client: Any, **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/allocations", {"name": "work", "gpu_model": H100, **body}, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def test_the_fragmentation_figures_and_the_plan_are_the_apis(
    api: Any, alice: Any, acme: Any, operator: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    client = api(alice)
    with django_capture_on_commit_callbacks(execute=True):  # a job alone on a node a move would empty
        ask(client, rung="container", gpus=6)
        filler = ask(client, rung="container", gpus=2)
        ask(client, rung="job", gpus=2)
        client.delete(f"/api/v1/allocations/{filler['id']}")
    place(acme, mig_profile="3g.40gb")
    place(acme, mig_profile="3g.40gb")  # two on one GPU strand its seventh compute slice

    now = api(operator).get("/api/v1/ops/fragmentation").json()
    plan = api(operator).post("/api/v1/ops/defragment", {"dry_run": True}, format="json").json()
    assert plan["moves"]  # the plan's "after" table is drawn only when it moves something
    assert plan["before"] == now
    assert any(f["free_gpus"] < f["gpus"] for f in now)
    assert any(f["stranded_mig_slices"] for f in now)

    page = signed_in(operator).get("/console/operators/defragment")
    assert page.status_code == 200
    assert console_figures(page.content.decode()) == now + plan["after"]


def console_skew(text: str) -> list[tuple[str, str, int, list[tuple[str, dict[str, int], str, list[Any]]]]]:
    """The page's domains with skew: hall, domain, nodes and, per version (named as the API names it), the values
    with their node counts, the norm and the nodes off it (id, hostname, value)."""
    names = {f.label: f.name for f in VERSION_FIELDS}
    domains = []
    for hall, domain, nodes, cell in SKEWED_ROW.findall(text):
        fields = []
        for label, values, norm, off in SKEWED_FIELD.findall(cell):
            counted = {v: int(n) for v, n in re.findall(r"(\S+) on (\d+) nodes?", values)}
            fields.append((names[label], counted, norm, [(int(i), h, v) for i, h, v in OUTLIER.findall(off)]))
        domains.append((hall, domain, int(nodes), fields))
    return domains


def api_skew(body: dict[str, Any]) -> list[tuple[str, str, int, list[tuple[str, dict[str, int], str, list[Any]]]]]:
    return [
        (
            d["hall"],
            d["nvlink_domain"],
            d["nodes"],
            [
                (f["field"], f["values"], f["norm"], [(o["id"], o["hostname"], o["value"]) for o in f["outliers"]])
                for f in d["fields"]
            ],
        )
        for d in body["domains"]
        if d["fields"]
    ]


def test_the_skew_console_applies_the_majority_rule_the_api_gives(api: Any, operator: Any) -> None:
    fleet_load(document=skewed_fleet(), actor=SYSTEM)
    body = api(operator).get("/api/v1/ops/fleet/skew").json()
    page = signed_in(operator).get("/console/operators/skew")
    assert page.status_code == 200
    text = page.content.decode()
    assert f"{body['skewed']} NVLink domains with skew" in text

    shown = [
        (hall, domain, nodes, [(n, c, norm, [o[1:] for o in off]) for n, c, norm, off in fields])
        for hall, domain, nodes, fields in console_skew(text)
    ]
    assert shown == [
        (
            "eu-west-1a",
            "eu-west-1a/nvl-0",
            3,
            [
                ("driver", {"570.10.01": 1, VERSIONS["driver"]: 2}, VERSIONS["driver"], [("euw1a-01", "570.10.01")]),
                ("cuda", {"12.9": 1, VERSIONS["cuda"]: 2}, VERSIONS["cuda"], [("euw1a-02", "12.9")]),
            ],
        ),
        (
            "eu-west-1a",
            "eu-west-1a/nvl-1",
            2,
            [("nccl", {"2.26.2": 1, VERSIONS["nccl"]: 1}, VERSIONS["nccl"], [("euw1a-05", "2.26.2")])],
        ),
    ]
    assert console_skew(text) == api_skew(body)
