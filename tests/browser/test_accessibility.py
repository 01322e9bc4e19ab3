"""Accessibility of the portal's main pages and of the staff consoles' pages, judged by axe-core in Chromium
(tests/data/axe-core): no serious or critical violation of WCAG 2 A/AA (labels, contrast, names of links and buttons,
landmarks...), at laptop and phone widths. The pages' own Content-Security-Policy would refuse the injected checker,
so this test's browser context bypasses it (the other browser tests keep it)."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest
from playwright.sync_api import Browser

from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from lifecycle.services.volumes import volume_create
from provisioning.models import Node
from provisioning.services.volumes import region_of
from tests.support import ROOT, SYSTEM
from tests.support.billing import load_fleet, place
from tests.support.browser import chromium, require_chromium, session_cookie
from tests.support.consoles import finance_data

pytestmark = pytest.mark.django_db(transaction=True)
AXE = ROOT / "tests" / "data" / "axe-core" / "axe.min.js"
PAGES = [
    "/signup",
    "/login",
    "/portal/",
    "/portal/launch?rung=container",
    "/portal/launch?rung=vm",
    "/portal/launch?rung=serverless",
    "/portal/volumes",
    "/portal/usage",
    "/portal/billing",
    "/portal/team",
    "/portal/access",
    "/portal/data",
    "/portal/security",
    "/portal/leave",
]


def violations(browser: Browser, base_url: str, cookie: str, path: str, width: int) -> list[str]:
    context = browser.new_context(base_url=base_url, bypass_csp=True, viewport={"width": width, "height": 900})
    try:
        if not path.startswith(("/signup", "/login")):
            context.add_cookies([{"name": "sessionid", "value": cookie, "url": base_url}])
        page = context.new_page()
        page.goto(path)
        page.add_script_tag(path=str(AXE))
        found: list[dict[str, Any]] = page.evaluate(
            "async () => (await axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']})).violations"
        )
    finally:
        context.close()
    return [
        f"{path} at {width}px: {v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def test_the_portals_pages_have_no_serious_accessibility_violation(live_server: Any, alice: Any, acme: Any) -> None:
    load_fleet()
    place(acme, gpus=1)
    eu_west = region_of("eu-west")
    volume_create(tenant=acme, name="datasets", region=eu_west, kind="filesystem", size_gb=50, actor=SYSTEM)
    cookie = session_cookie(alice)
    found: list[str] = []
    with chromium(require_chromium()) as browser, pytest.MonkeyPatch.context() as patch:
        patch.setitem(os.environ, "DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        for path in PAGES:
            for width in (1280, 390):
                found += violations(browser, live_server.url, cookie, path, width)
    assert found == [], "\n".join(found)


def test_the_checker_is_the_file_its_readme_names() -> None:
    readme = (AXE.parent / "README.md").read_text()
    for name in ("axe.min.js", "LICENSE"):
        digest = hashlib.sha256((AXE.parent / name).read_bytes()).hexdigest()
        assert f"| `{name}` |" in readme
        assert digest in readme, f"{name} is not the file tests/data/axe-core/README.md names"


CONSOLE_PAGES = {
    "compliance": [
        "/console/compliance/",
        "/console/compliance/verify?run=1",
        "/console/compliance/bundle",
        "/console/compliance/holds",
        "/console/compliance/erasures",
        "/console/compliance/residency",
    ],
    "operator": [
        "/console/operators/",
        "/console/operators/?colour=state",
        "/console/operators/nodes/{node}",
        "/console/operators/nodes/{node}/drain",
        "/console/operators/defragment",
        "/console/operators/skew",
        "/console/operators/storage",
        "/console/operators/cold-starts",
        "/console/operators/quotas",
    ],
    "finance": [
        "/console/finance/",
        "/console/finance/budgets",
        "/console/finance/reconciliation",
        "/console/finance/pushes",
        "/console/finance/exports",
    ],
}


def test_the_consoles_pages_have_no_serious_accessibility_violation(
    live_server: Any, compliance: Any, operator: Any, finance: Any, acme: Any, globex: Any
) -> None:
    load_fleet()
    place(acme, gpus=1)
    place(globex, mig_profile="1g.10gb")
    legal_hold_create(tenant=acme, matter="M", reason="r", scope=AssetScope(), lock_until=None, actor=SYSTEM)
    finance_data(acme)
    node = Node.objects.order_by("pk").values_list("pk", flat=True).first()
    users = {"compliance": compliance, "operator": operator, "finance": finance}
    found: list[str] = []
    with chromium(require_chromium()) as browser, pytest.MonkeyPatch.context() as patch:
        patch.setitem(os.environ, "DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        for role, paths in CONSOLE_PAGES.items():
            cookie = session_cookie(users[role])
            for path in paths:
                for width in (1280, 390):
                    found += violations(browser, live_server.url, cookie, path.format(node=node), width)
    assert found == [], "\n".join(found)
