"""The consoles' frame: staff land on their own console after signing in, each role opens only its console, a
tenant member opens none (and staff no tenant portal), the portal's security headers apply."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from portal.consoles.frame import CONSOLES, landing
from portal.security import POLICY
from provisioning.models import Node
from tests.support import SYSTEM
from tests.support.billing import place
from tests.support.consoles import signed_in
from tests.support.data import regions
from tests.support.otp import current_code, pass_second_factor, staff_device

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|MERGE)\b", re.IGNORECASE)
COMPLIANCE_PAGES = [
    "/console/compliance/",
    "/console/compliance/verify",
    "/console/compliance/bundle",
    "/console/compliance/holds",
    "/console/compliance/erasures",
    "/console/compliance/residency",
]
OPERATOR_PAGES = [
    "/console/operators/",
    "/console/operators/defragment",
    "/console/operators/skew",
    "/console/operators/quotas",
]


FINANCE_PAGES = [
    "/console/finance/",
    "/console/finance/budgets",
    "/console/finance/reconciliation",
    "/console/finance/pushes",
    "/console/finance/exports",
]


def test_it_registers_the_compliance_operator_and_finance_consoles() -> None:
    assert list(CONSOLES) == ["compliance", "finance", "operators"]


@pytest.mark.parametrize(
    ("who", "where"),
    [("compliance", "/console/compliance/"), ("operator", "/console/operators/"), ("finance", "/console/finance/")],
)
def test_staff_sign_in_at_the_portals_page_and_land_on_their_console(who: str, where: str, request: Any) -> None:
    user = request.getfixturevalue(who)
    device = staff_device(user)
    client = Client()
    asked = client.post("/login", {"username": user.username, "password": "pw"})
    assert asked["Location"].startswith("/login/code")  # every staff user gives a code
    answer = client.post(asked["Location"], {"code": current_code(device)})
    assert answer.status_code == 302
    assert answer["Location"] == where
    assert client.get("/console/")["Location"] == where
    assert landing(user) == where


def test_a_tenant_member_still_lands_on_the_portal(alice: Any) -> None:
    answer = Client().post("/login", {"username": "alice", "password": "pw"})
    assert answer["Location"] == "/portal/"
    assert landing(alice) is None


@pytest.mark.parametrize("path", COMPLIANCE_PAGES)
def test_compliance_opens_its_pages_and_the_operator_gets_a_plain_403(
    path: str, compliance: Any, operator: Any
) -> None:
    page = signed_in(compliance).get(path)
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == POLICY
    assert b"Compliance console" in page.content
    assert b"Operator console" not in page.content
    refused = signed_in(operator).get(path)
    assert refused.status_code == 403
    assert b"Compliance" not in refused.content


@pytest.mark.parametrize("path", OPERATOR_PAGES)
def test_the_operator_opens_its_pages_and_compliance_gets_a_plain_403(
    path: str, compliance: Any, operator: Any
) -> None:
    page = signed_in(operator).get(path)
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == POLICY
    assert b"Operator console" in page.content
    assert signed_in(compliance).get(path).status_code == 403


@pytest.mark.parametrize("path", FINANCE_PAGES)
def test_finance_opens_its_pages_and_the_others_get_a_plain_403(
    path: str, finance: Any, compliance: Any, operator: Any
) -> None:
    page = signed_in(finance).get(path)
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == POLICY
    assert b"Finance console" in page.content
    assert b"Operator console" not in page.content
    assert signed_in(compliance).get(path).status_code == 403
    assert signed_in(operator).get(path).status_code == 403


@pytest.mark.parametrize("path", ["/console/", *COMPLIANCE_PAGES, *OPERATOR_PAGES, *FINANCE_PAGES])
def test_a_tenant_member_opens_no_console(path: str, alice: Any) -> None:
    assert signed_in(alice).get(path).status_code == 403


@pytest.mark.parametrize("path", [*COMPLIANCE_PAGES, *OPERATOR_PAGES])
def test_finance_staff_open_no_other_console(path: str, finance: Any) -> None:
    assert signed_in(finance).get(path).status_code == 403


def test_anyone_signed_out_is_sent_to_sign_in(db: None) -> None:
    answer = Client().get("/console/operators/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("/login?next=/console/operators/")


def test_staff_open_no_tenant_portal(compliance: Any, operator: Any, finance: Any) -> None:
    for user in (compliance, operator, finance):
        assert signed_in(user).get("/portal/").status_code == 403


def test_an_inactive_or_non_staff_user_in_the_group_opens_nothing(compliance: Any) -> None:
    compliance.is_staff = False
    compliance.save()
    assert signed_in(compliance).get("/console/compliance/").status_code == 403


def test_a_console_post_without_the_csrf_token_is_refused(operator: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    pass_second_factor(client, operator)
    assert client.post("/console/operators/quotas", {"tenant": "acme"}).status_code == 403


def test_no_console_page_writes_when_read(compliance: Any, operator: Any, finance: Any, acme: Any) -> None:
    regions()
    place(acme, gpus=1)
    node = Node.objects.order_by("pk").first()
    assert node is not None
    hold = legal_hold_create(tenant=acme, matter="M", reason="r", scope=AssetScope(), lock_until=None, actor=SYSTEM)
    pages = {
        compliance: [
            *COMPLIANCE_PAGES,
            "/console/compliance/verify?run=1",
            f"/console/compliance/holds/{hold.pk}/release",
        ],
        operator: [
            *OPERATOR_PAGES,
            "/console/operators/?colour=state",
            f"/console/operators/nodes/{node.pk}?diagnose=1",
            f"/console/operators/nodes/{node.pk}/drain",
        ],
        finance: [*FINANCE_PAGES, "/console/finance/?since=2026-01&until=2026-12"],
    }
    for user, paths in pages.items():
        client = signed_in(user)
        for path in paths:
            with CaptureQueriesContext(connection) as queries:
                assert client.get(path).status_code == 200, path
            writes = [q["sql"] for q in queries if WRITES.match(q["sql"])]
            assert writes == [], f"{path} wrote: {writes}"
