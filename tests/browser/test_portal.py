"""The portal in a real browser (Debian's Chromium through Playwright, against the live server): a new customer signs
up, confirms the address, signs in, launches a container on a whole GPU and on a MIG slice, watches them run with
the cost accruing, stops one, reads usage and the upcoming invoice, invites a member, creates and revokes an API
key, sets a retention policy and closes the account; a shape without a price is refused on the launch form; another
tenant gets 404s, a viewer cannot launch; an owner reserves capacity and launches on it.

With ``LADDER_SCREENSHOTS=<folder>`` the walk saves a screenshot of each main page there (docs/portal/ holds the
ones docs/portal.md shows)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.test import override_settings
from playwright.sync_api import Page, expect

from compliance.models import AccountClosure, RetentionPolicy
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, Reservation
from tenancy.models import ApiKey, Membership, Tenant
from tests.support import teammate
from tests.support.billing import load_fleet, place, price
from tests.support.browser import screenshot

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct horse battery staple 42"
SHOTS = os.environ.get("LADDER_SCREENSHOTS")


def shot(page: Page, name: str) -> None:
    if SHOTS:
        page.set_viewport_size({"width": 1200, "height": 900})
        screenshot(page, Path(SHOTS) / f"{name}.png")


def launch(page: Page, rung: str, name: str, **fields: str) -> None:
    page.goto(f"/portal/launch?rung={rung}")
    page.get_by_label("Name", exact=True).fill(name)
    for label, value in fields.items():
        control = page.get_by_label(label, exact=True)
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
    if name == "trainer":
        shot(page, "launch")
    page.get_by_role("button", name=re.compile("^Launch")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(name)


@override_settings(LADDER_SIM_PROVISION_SECONDS=0, LADDER_SIM_LOG_SECONDS=1)
def test_a_customer_buys_runs_is_billed_and_leaves(browser_page: Page, live_server: Any) -> None:
    load_fleet()
    price("3600.00", rung="container")  # a dollar a second: the cost visibly accrues while the page is open
    price("3600.00", rung="container", unit="mig", mig_profile="1g.10gb")
    page = browser_page

    page.goto("/signup")
    shot(page, "signup")
    page.get_by_label("Organisation name").fill("Initech Labs")
    page.get_by_label("E-mail address").fill("ada@initech.example")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Check your e-mail")
    link = re.search(r"https?://\S+/confirm/\S+", str(mail.outbox[-1].body))
    assert link
    page.goto(link[0])
    expect(page.get_by_text("Nothing runs yet")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Username").fill("ada@initech.example")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("link", name="Launch", exact=True).first).to_be_visible()

    launch(
        page,
        "container",
        "trainer",
        **{"GPU model": "H100-SXM-80GB", "Whole GPUs": "1", "Container image": "nvcr.io/nvidia/pytorch:25.01-py3"},
    )
    allocations_reconcile()
    expect(page.locator("[data-state]").first).to_have_attribute("data-state", "running", timeout=10_000)
    shot(page, "allocation")
    launch(page, "container", "slice", **{"GPU model": "H100-SXM-80GB", "MIG slice": "1g.10gb"})
    allocations_reconcile()
    tenant = Tenant.objects.get(slug="initech-labs")
    assert sorted(Allocation.objects.filter(tenant=tenant).values_list("performance", flat=True)) == [
        "mig",
        "whole_gpu",
    ]

    page.get_by_role("link", name="Running").click()
    running = page.locator('[data-state="running"]')
    expect(running).to_have_count(2, timeout=10_000)
    spent = page.locator('[data-cost="spent"]')
    first = spent.inner_text()
    expect(spent).not_to_have_text(first, timeout=10_000)  # the page polls; the cost moves on its own
    shot(page, "running")

    page.get_by_role("link", name="trainer").click()
    page.get_by_role("link", name="Stop").click()
    page.get_by_role("button", name="Stop it").click()
    allocations_reconcile()
    expect(page.locator("#live [data-state]")).to_have_attribute("data-state", "stopped", timeout=10_000)

    page.get_by_role("link", name="Usage and cost").click()
    expect(page.get_by_role("heading", name=re.compile("^Upcoming invoice"))).to_be_visible()
    expect(page.locator("[data-total]")).not_to_have_text(re.compile(r"^0\.00"))
    shot(page, "usage")

    page.get_by_role("link", name="Team and keys").click()
    page.get_by_label("E-mail address").fill("grace@initech.example")
    page.get_by_label("Role", exact=True).select_option("member")
    page.get_by_role("button", name="Invite").click()
    expect(page.get_by_text("grace@initech.example is invited as member")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("ci")
    page.get_by_role("button", name="Create the key").click()
    expect(page.locator("[data-key]")).to_contain_text("ldr_")
    shot(page, "team")
    page.get_by_role("button", name="Revoke ci").click()
    expect(page.get_by_text("The key ci is revoked")).to_be_visible()
    assert ApiKey.objects.get(name="ci").revoked_at is not None
    assert Membership.objects.get(user__username="grace@initech.example").role == "member"

    page.get_by_role("link", name="Data").click()
    page.get_by_label("Days to keep job_log").fill("30")
    page.get_by_role("button", name="Set job_log").click()
    expect(page.locator('[data-retention="job_log"]')).to_have_text("30 days")
    assert RetentionPolicy.objects.get(tenant=tenant, category="job_log").days == 30
    shot(page, "data")

    for name, path in (("billing", "/portal/billing"), ("access", "/portal/access"), ("security", "/portal/security")):
        page.goto(path)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        shot(page, name)
    page.goto("/portal/data")
    page.get_by_role("link", name="Close the account").click()
    page.get_by_label(re.compile("Type your organisation")).fill("initech-labs")
    shot(page, "leave")
    page.get_by_role("button", name="Close the account").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Initech Labs is closing")
    assert AccountClosure.objects.filter(tenant=tenant).exists()


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_a_spot_job_is_launched_seen_as_spot_and_requeued_when_preempted(
    browser_page: Page, browser_login: Any, alice: Any, globex: Any
) -> None:
    load_fleet()  # the suite's price book: spot at 60% off on demand
    browser_login(alice)
    page = browser_page
    page.goto("/portal/launch?rung=job")
    expect(page.get_by_text("Spot (60% off)").first).to_be_visible()
    expect(page.get_by_label("When spot work is preempted", exact=True)).to_be_visible()
    expect(page.get_by_label("Container image", exact=True)).to_be_visible()
    launch(
        page,
        "job",
        "spotty",
        **{
            "GPU model": "H100-SXM-80GB",
            "Region": "eu-west",
            "Whole GPUs": "8",
            "Capacity (spot is cheaper, and may be preempted with notice)": "spot",
            "When spot work is preempted": "requeue",
        },
    )
    expect(page.locator(".capacity")).to_contain_text("requeued from its checkpoint if preempted, with 30 s notice")
    job = Allocation.objects.get(name="spotty")
    assert (job.capacity_class, job.spec["on_preemption"]) == ("spot", "requeue")
    allocations_reconcile()
    urgent = [place(globex, gpus=8, regions=("eu-west",)) for _ in range(2)]  # on demand: takes the spot GPUs
    assert all(a.pk for a in urgent)
    allocations_reconcile()
    page.reload()
    expect(page.locator("#live [data-state]")).to_have_attribute("data-state", "queued", timeout=10_000)
    expect(page.locator(".capacity")).to_contain_text("Last preempted")


def test_an_owner_reserves_capacity_and_launches_on_it(browser_page: Page, browser_login: Any, alice: Any) -> None:
    load_fleet()
    browser_login(alice)
    page = browser_page
    page.goto("/portal/")
    page.get_by_role("link", name="Reserve capacity").click()
    expect(page.locator('[data-pool="H100-SXM-80GB@eu-west-1a"]')).to_be_visible()
    page.get_by_label("GPUs and hall", exact=True).select_option("H100-SXM-80GB@eu-west-1a")
    page.get_by_label("GPUs", exact=True).fill("4")
    page.get_by_label("Term", exact=True).select_option("30")
    page.get_by_role("button", name="Reserve").click()
    expect(page.locator('[data-field="gpus"] .error')).to_contain_text("a multiple of 8 GPUs")  # whole nodes
    page.get_by_label("GPUs", exact=True).fill("8")
    page.get_by_role("button", name="Reserve").click()
    expect(page.get_by_text("billed each month in advance")).to_be_visible()
    reservation = Reservation.objects.get()
    expect(page.locator(f'[data-reservation="{reservation.pk}"]')).to_contain_text("H100-SXM-80GB")
    launch(
        page,
        "container",
        "held",
        **{
            "GPU model": "H100-SXM-80GB",
            "Region": "eu-west",
            "Whole GPUs": "8",
            "Capacity (spot is cheaper, and may be preempted with notice)": "reserved",
            "Reservation (for reserved capacity)": str(reservation.pk),
        },
    )
    assert Allocation.objects.get(name="held").reservation_id == reservation.pk


@pytest.mark.own_price_book  # only containers on whole H100s are priced
def test_a_shape_without_a_price_is_refused_on_the_launch_form(
    browser_page: Page, browser_login: Any, alice: Any
) -> None:
    load_fleet()
    price("2.40", rung="container")
    browser_login(alice)
    page = browser_page
    page.goto("/portal/launch?rung=serverless")
    page.get_by_label("Name", exact=True).fill("inference")
    page.get_by_label("GPU model", exact=True).select_option("H100-SXM-80GB")
    page.get_by_label("MIG slice", exact=True).select_option("3g.40gb")
    page.get_by_role("button", name=re.compile("^Launch")).click()
    refusal = page.get_by_text(re.compile("serverless/H100-SXM-80GB/mig-3g.40gb/eu-west has no price yet"))
    expect(refusal).to_be_visible()
    assert not Allocation.objects.exists()


def test_another_tenant_gets_404_and_a_viewer_cannot_launch(
    browser_page: Page, browser_login: Any, alice: Any, charlie: Any, acme: Any
) -> None:
    load_fleet()
    work = place(acme, gpus=1)
    browser_login(charlie)
    response = browser_page.goto(f"/portal/allocations/{work.pk}")
    assert response is not None
    assert response.status == 404
    teammate(acme, "viewer")
    browser_page.context.clear_cookies()
    browser_login(Membership.objects.get(role="viewer").user)
    response = browser_page.goto("/portal/launch")
    assert response is not None
    assert response.status == 403
    browser_page.goto("/portal/")
    expect(browser_page.get_by_role("link", name="Launch", exact=True)).to_have_count(1)  # the menu, not a button

    browser_page.context.clear_cookies()
    browser_login(alice)
    forged = browser_page.request.post(
        "/portal/launch", form={"rung": "container", "name": "x", "gpu_model": "H100-SXM-80GB", "gpus": "1"}
    )
    assert forged.status == 403  # no CSRF token: refused before the view runs
    assert Allocation.objects.filter(name="x").count() == 0
