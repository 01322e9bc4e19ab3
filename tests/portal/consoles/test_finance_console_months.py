"""The finance console reads months as the API does (core.domain.months): a month it cannot read is refused on the field
that holds it, in the same words the API's problem gives."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest

from billing.models import ReconciliationRun
from tests.support.consoles import signed_in, token


@pytest.mark.parametrize(
    ("query", "field"),
    [({"since": "Nov"}, "since"), ({"since": "2026-11", "until": "2026-13"}, "until"), ({"until": "1999-12"}, "until")],
)
def test_a_month_the_margin_page_cannot_read_is_refused_as_the_api_refuses_it(
    api: Any, finance: Any, query: dict[str, str], field: str
) -> None:
    page = signed_in(finance).get("/console/finance/", query)
    assert page.status_code == 422
    bad = query[field]
    params = {"from": query.get("since", ""), "to": query.get("until", "")}
    problem = api(finance).get("/api/v1/finance/margin", params).json()
    assert problem["code"] == "validation_error"
    assert problem["detail"] == f"{bad!r} is not a month: write it as YYYY-MM, e.g. 2027-03 (from 2000 on)."
    on_the_field = rf'name="{field}"[^>]*><p class="error" role="alert">{re.escape(problem["detail"])}</p>'
    assert re.search(on_the_field, unescape(page.content.decode()))


def test_a_month_the_reconciliation_form_cannot_read_is_refused_on_it(api: Any, finance: Any) -> None:
    client = signed_in(finance)
    page = client.get("/console/finance/reconciliation")
    answer = client.post("/console/finance/reconciliation", {"once": token(page), "month": "2026-13", "tenant": ""})
    assert answer.status_code == 422
    problem = api(finance).get("/api/v1/finance/reconciliation", {"month": "2026-13"}).json()
    assert problem["code"] == "month_invalid"
    assert problem["detail"] in unescape(answer.content.decode())
    assert not ReconciliationRun.objects.exists()
