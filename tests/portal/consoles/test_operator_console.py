"""The operator console through Django's test client: the heatmap with tenants' whole GPUs, MIG slices by start and
soft shares (by tenant or by state, with text for each GPU), a node's page with drain / undrain / quarantine after a
confirmation (audited as the operator, a refusal on the form, a form sent twice acting once), the diagnosis's
refusal without a cluster, fragmentation and the defragmentation plan and run, version skew per NVLink domain, and
quotas (GPUs, endpoint calls, storage) set and lifted."""

from __future__ import annotations

import re
from typing import Any

from core.models import AuditEvent
from lifecycle.services.volumes import volume_create
from provisioning.models import DefragmentRun, Node, Region
from provisioning.services.fleet import fleet_load
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.billing import place
from tests.support.consoles import signed_in, token
from tests.support.data import regions
from tests.support.fleet_documents import changed, small_fleet

# --- the heatmap --------------------------------------------------------------------------------------------------


def test_the_heatmap_draws_whole_gpus_mig_slices_and_soft_shares_by_tenant(
    operator: Any, acme: Any, globex: Any
) -> None:
    regions()
    whole = place(acme, gpus=2)
    mig = place(globex, mig_profile="3g.40gb")
    soft = place(acme, rung="serverless", share_mode="mps", share_milli=250)
    page = signed_in(operator).get("/console/operators/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "GPUs</dt><dd>36</dd>" in text
    assert '<h2 id="r-eu-west">EU West' in text
    assert "Hall eu-west-1a" in text
    assert "NVLink domain eu-west-1a/nvl-0" in text
    assert f"whole for acme (allocation {whole.pk})" in text
    assert re.search(rf"3g\.40gb at slice \d for globex \(allocation {mig.pk}\)", text)
    assert f"0.250 share for acme (allocation {soft.pk})" in text
    # acme and globex get their own colours, named in the legend; a 3g instance spans four memory slices
    assert '<span class="swatch t0" aria-hidden="true"></span> acme' in text
    assert '<span class="swatch t1" aria-hidden="true"></span> globex' in text
    assert re.search(r'class="seg t1 s[04] l4"', text)
    assert 'class="seg t0 s0 l8"' in text
    assert "style=" not in text  # the CSP allows no style attribute


def test_the_heatmap_colours_by_state_on_request(operator: Any) -> None:
    regions()
    node = Node.objects.get(hostname="euw1a-01")
    Node.objects.filter(pk=node.pk).update(state="draining")
    text = signed_in(operator).get("/console/operators/", {"colour": "state"}).content.decode()
    assert 'class="map by-state"' in text
    assert '<li class="node n-draining">' in text
    assert "node quarantined" in text  # the state legend


# --- a node ------------------------------------------------------------------------------------------------------


def test_the_operator_drains_quarantines_and_undrains_a_node_with_a_reason(operator: Any) -> None:
    regions()
    node = Node.objects.get(hostname="euw1a-01")
    client = signed_in(operator)
    page = client.get(f"/console/operators/nodes/{node.pk}")
    assert b"580.65.06" in page.content
    assert b"Drain</a>" in page.content
    confirm = client.get(f"/console/operators/nodes/{node.pk}/drain")
    assert b"Draining stops placing new work" in confirm.content
    no_reason = client.post(f"/console/operators/nodes/{node.pk}/drain", {"once": token(confirm), "reason": ""})
    assert no_reason.status_code == 422
    form = {"once": token(confirm), "reason": "fan failure"}
    assert client.post(f"/console/operators/nodes/{node.pk}/drain", form).status_code == 302
    assert client.post(f"/console/operators/nodes/{node.pk}/drain", form).status_code == 302  # once
    node.refresh_from_db()
    assert node.state == "draining"
    drained = AuditEvent.objects.filter(action="node.drained")
    assert [(e.actor_label, e.data["reason"]) for e in drained] == [("operator", "fan failure")]
    confirm = client.get(f"/console/operators/nodes/{node.pk}/quarantine")
    client.post(f"/console/operators/nodes/{node.pk}/quarantine", {"once": token(confirm), "reason": "xid 79"})
    node.refresh_from_db()
    assert node.state == "quarantined"
    confirm = client.get(f"/console/operators/nodes/{node.pk}/undrain")
    client.post(f"/console/operators/nodes/{node.pk}/undrain", {"once": token(confirm), "reason": "fixed"})
    node.refresh_from_db()
    assert node.state == "ready"


def test_a_transition_the_state_forbids_is_refused_on_the_form(operator: Any) -> None:
    regions()
    node = Node.objects.get(hostname="euw1a-01")
    client = signed_in(operator)
    confirm = client.get(f"/console/operators/nodes/{node.pk}/undrain")
    refused = client.post(f"/console/operators/nodes/{node.pk}/undrain", {"once": token(confirm), "reason": "x"})
    assert refused.status_code == 422
    assert b"Node euw1a-01 is ready; undrain applies only to a node that is" in refused.content
    assert not AuditEvent.objects.filter(action="node.undrained").exists()


def test_unknown_nodes_and_actions_are_404(operator: Any) -> None:
    regions()
    node = Node.objects.get(hostname="euw1a-01")
    client = signed_in(operator)
    assert client.get("/console/operators/nodes/99999").status_code == 404
    assert client.get(f"/console/operators/nodes/{node.pk}/fail").status_code == 404
    assert client.get(f"/console/operators/nodes/{node.pk}/explode").status_code == 404


def test_diagnosis_without_a_cluster_shows_the_services_refusal(operator: Any) -> None:
    regions()
    node = Node.objects.get(hostname="euw1a-01")
    page = signed_in(operator).get(f"/console/operators/nodes/{node.pk}", {"diagnose": "1"})
    assert page.status_code == 200
    assert b"Hall eu-west-1a has no Kubernetes cluster registered." in page.content


# --- fragmentation and defragmentation -----------------------------------------------------------------------------


def test_fragmentation_the_plan_and_starting_a_run(operator: Any, acme: Any) -> None:
    regions()
    place(acme, gpus=1)
    client = signed_in(operator)
    page = client.get("/console/operators/defragment")
    text = page.content.decode()
    assert page.status_code == 200
    assert "<td>H100-SXM-80GB</td><td>eu-west-1a</td><td>20</td><td>19</td>" in text
    assert "Defragmentation plan (dry run)" in text
    assert not DefragmentRun.objects.exists()  # the page plans, it moves nothing
    form = {"once": token(page)}
    assert client.post("/console/operators/defragment", form).status_code == 302
    assert client.post("/console/operators/defragment", form).status_code == 302  # once
    run = DefragmentRun.objects.get()
    assert run.ordered_by == "operator"
    assert AuditEvent.objects.get(action="defragment.started").actor_label == "operator"
    assert f'id="run-{run.pk}"'.encode() in client.get("/console/operators/defragment").content


# --- version skew and quotas ---------------------------------------------------------------------------------------


def test_version_skew_names_the_domain_the_version_and_the_odd_node(operator: Any) -> None:
    document = changed(small_fleet(), "regions.0.halls.0.nodes.1.versions.driver", "570.10.01")
    fleet_load(document=document, actor=SYSTEM)
    text = signed_in(operator).get("/console/operators/skew").content.decode()
    assert "1 NVLink domain with skew" in text
    assert "<td>eu-west-1a/nvl-0</td>" in text
    assert "570.10.01 on 1 node" in text
    assert "580.65.06 on 1 node" in text
    assert ">euw1a-0" in text.split("Off the majority")[1]


def test_the_operator_sets_and_lifts_a_quota(operator: Any, acme: Any) -> None:
    client = signed_in(operator)
    page = client.get("/console/operators/quotas")
    prefix = f"t{acme.pk}"
    form = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-gpus": "4.5"}
    assert client.post("/console/operators/quotas", form).status_code == 302
    acme.refresh_from_db()
    assert acme.gpu_quota_milli == 4500
    event = AuditEvent.objects.filter(target_type="tenant", actor_label="operator").latest("seq")
    assert event.tenant_id == acme.pk
    client.post("/console/operators/quotas", form)  # sent twice: nothing more
    assert AuditEvent.objects.filter(target_type="tenant", actor_label="operator").count() == 1
    page = client.get("/console/operators/quotas")
    lift = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-gpus": ""}
    client.post("/console/operators/quotas", lift)
    acme.refresh_from_db()
    assert acme.gpu_quota_milli is None


def test_the_operator_sets_a_tenants_endpoint_calls_and_gives_the_default_back(
    operator: Any, acme: Any, settings: Any
) -> None:
    settings.LADDER_ENDPOINT_CALLS_PER_MINUTE = 1200
    client = signed_in(operator)
    page = client.get("/console/operators/quotas")
    assert re.search(r"<td data-endpoint-calls>1200 \(default\)</td>", page.content.decode())
    prefix = f"t{acme.pk}"
    form = {
        "tenant": "acme",
        f"{prefix}-once": token(page, prefix),
        f"{prefix}-gpus": "",
        f"{prefix}-endpoint_calls": "300",
    }
    done = client.post("/console/operators/quotas", form, follow=True)
    assert "acme now has no quota; each endpoint takes 300 calls a minute." in done.content.decode()
    assert "<td data-endpoint-calls>300</td>" in done.content.decode()
    assert Tenant.objects.get(pk=acme.pk).endpoint_calls_per_minute == 300
    event = AuditEvent.objects.filter(action="tenant.quota_set", actor_label="operator").latest("seq")
    assert event.data["endpoint_calls_per_minute"] == {"old": None, "new": 300}

    page = client.get("/console/operators/quotas")
    zero = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-endpoint_calls": "0"}
    refused = client.post("/console/operators/quotas", zero)
    assert refused.status_code == 422
    assert b"greater than or equal to 1" in refused.content
    back = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-endpoint_calls": ""}
    client.post("/console/operators/quotas", back)
    assert Tenant.objects.get(pk=acme.pk).endpoint_calls_per_minute is None


def test_a_bad_quota_is_refused_and_an_unknown_tenant_is_404(operator: Any, acme: Any) -> None:
    client = signed_in(operator)
    page = client.get("/console/operators/quotas")
    prefix = f"t{acme.pk}"
    refused = client.post(
        "/console/operators/quotas", {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-gpus": "-1"}
    )
    assert refused.status_code == 422
    assert b"greater than or equal to 0" in refused.content
    assert Tenant.objects.get(pk=acme.pk).gpu_quota_milli is None
    assert client.post("/console/operators/quotas", {"tenant": "nope"}).status_code == 404


def test_the_operator_sets_and_lifts_a_storage_quota_beside_what_the_volumes_hold(operator: Any, acme: Any) -> None:
    regions()
    volume_create(
        tenant=acme, name="datasets", region=Region.objects.get(code="eu-west"), kind="filesystem", size_gb=500,
        actor=SYSTEM,
    )  # fmt: skip
    client = signed_in(operator)
    page = client.get("/console/operators/quotas")
    assert "<td data-storage>500 GB of no quota</td>" in page.content.decode()
    prefix = f"t{acme.pk}"
    form = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-volume_gb": "800"}
    done = client.post("/console/operators/quotas", form, follow=True)
    assert "Its volumes may hold 800 GB." in done.content.decode()
    assert "<td data-storage>500 GB of 800 GB</td>" in done.content.decode()
    assert f'name="{prefix}-volume_gb" value="800"' in done.content.decode()  # the form starts from it
    assert Tenant.objects.get(pk=acme.pk).volume_quota_gb == 800
    event = AuditEvent.objects.filter(action="tenant.quota_set", actor_label="operator").latest("seq")
    assert event.data["volume_quota_gb"] == {"old": None, "new": 800}

    page = client.get("/console/operators/quotas")
    negative = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-volume_gb": "-1"}
    refused = client.post("/console/operators/quotas", negative)
    assert refused.status_code == 422
    assert b"greater than or equal to 0" in refused.content
    assert Tenant.objects.get(pk=acme.pk).volume_quota_gb == 800
    lift = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-volume_gb": ""}
    lifted = client.post("/console/operators/quotas", lift, follow=True)
    assert "Its volumes have no storage quota." in lifted.content.decode()
    assert Tenant.objects.get(pk=acme.pk).volume_quota_gb is None
