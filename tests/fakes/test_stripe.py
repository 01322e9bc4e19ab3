"""The in-memory Stripe server behaves like Stripe where billing depends on it, seen only through the official SDK."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

import pytest
import stripe

from tests.fakes.stripe import StripeServer, event, parse_form, signed_webhook
from tests.support import ROOT

KEY = "sk_test_ladder"
T0 = 1_800_000_000  # hour-aligned, so event summaries may be grouped by hour
DAY = 86_400


@pytest.fixture
def server() -> Iterator[StripeServer]:
    srv = StripeServer(api_key=KEY).start()
    yield srv
    srv.stop()


def sdk(server: StripeServer, *, key: str = KEY, retries: int = 0) -> stripe.StripeClient:
    return stripe.StripeClient(key, base_addresses={"api": server.url}, max_network_retries=retries)


@pytest.fixture
def client(server: StripeServer) -> stripe.StripeClient:
    return sdk(server)


@dataclass
class Catalog:
    customer: str
    meter: str
    price: str
    subscription: str


def catalog(
    client: stripe.StripeClient, *, unit_amount_decimal: str = "0.5", event_name: str = "gpu_seconds"
) -> Catalog:
    customer = client.v1.customers.create(params={"name": "Acme", "email": "ops@acme.test"})
    product = client.v1.products.create(params={"name": "GPU time"})
    meter = client.v1.billing.meters.create(
        params={"display_name": "GPU seconds", "event_name": event_name, "default_aggregation": {"formula": "sum"}}
    )
    price = client.v1.prices.create(
        params={
            "product": product.id,
            "currency": "usd",
            "unit_amount_decimal": Decimal(unit_amount_decimal),
            "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id},
        }
    )
    sub = client.v1.subscriptions.create(params={"customer": customer.id, "items": [{"price": price.id}]})
    return Catalog(customer.id, meter.id, price.id, sub.id)


def send(client: stripe.StripeClient, customer: str, value: str = "1", **params: Any) -> stripe.billing.MeterEvent:
    """Report usage; params are cast because the tests deliberately send values the SDK's types would refuse."""
    options = {"idempotency_key": params.pop("idempotency_key")} if "idempotency_key" in params else None
    body = {"event_name": "gpu_seconds", "payload": {"stripe_customer_id": customer, "value": value}, **params}
    return client.v1.billing.meter_events.create(params=cast(Any, body), options=cast(Any, options))


def test_it_creates_and_lists_a_catalog(client: stripe.StripeClient) -> None:
    customer = client.v1.customers.create(params={"name": "Acme", "metadata": {"tenant": "t-1", "0": "kept"}})
    assert customer.id.startswith("cus_")
    assert customer.object == "customer"
    assert customer.livemode is False
    assert client.v1.customers.retrieve(customer.id)["metadata"].to_dict() == {"tenant": "t-1", "0": "kept"}
    product = client.v1.products.create(params={"name": "GPU time"})
    meter = client.v1.billing.meters.create(
        params={"display_name": "GPU seconds", "event_name": "gpu_seconds", "default_aggregation": {"formula": "sum"}}
    )
    assert meter.id.startswith("mtr_")
    assert meter.customer_mapping.event_payload_key == "stripe_customer_id"
    assert meter.value_settings.event_payload_key == "value"
    assert meter.status == "active"
    price = client.v1.prices.create(
        params={
            "product": product.id,
            "currency": "USD",
            "unit_amount_decimal": Decimal("0.0125"),
            "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id},
            "lookup_key": "gpu_second",
        }
    )
    assert price.id.startswith("price_")
    assert price.currency == "usd"
    assert price.unit_amount is None
    assert price.unit_amount_decimal == Decimal("0.0125")  # the SDK turns the wire string back into a Decimal
    assert price.recurring is not None
    assert price.recurring.meter == meter.id
    listed = client.v1.prices.list(params={"lookup_keys": ["gpu_second"], "active": True})
    assert [p.id for p in listed.data] == [price.id]

    with pytest.raises(stripe.InvalidRequestError) as lookup_taken:
        client.v1.prices.create(
            params={"product": product.id, "currency": "usd", "unit_amount": 1, "lookup_key": "gpu_second"}
        )
    assert lookup_taken.value.param == "lookup_key"
    moved = client.v1.prices.create(
        params={
            "product": product.id,
            "currency": "usd",
            "unit_amount": 1,
            "lookup_key": "gpu_second",
            "transfer_lookup_key": True,
        }
    )
    assert [p.id for p in client.v1.prices.list(params={"lookup_keys": ["gpu_second"]}).data] == [moved.id]

    with pytest.raises(stripe.InvalidRequestError) as unknown:
        client.v1.customers.retrieve("cus_missing")
    assert unknown.value.http_status == 404
    assert unknown.value.code == "resource_missing"


def test_it_pages_lists_newest_first(client: stripe.StripeClient) -> None:
    ids = [client.v1.customers.create(params={"name": f"c{n}"}).id for n in range(3)]
    first = client.v1.customers.list(params={"limit": 2})
    assert [c.id for c in first.data] == ids[:0:-1]
    assert first.has_more
    rest = client.v1.customers.list(params={"limit": 2, "starting_after": first.data[-1].id})
    assert [c.id for c in rest.data] == ids[:1]
    assert not rest.has_more
    assert [c.id for c in client.v1.customers.list(params={"limit": 1}).auto_paging_iter()] == ids[::-1]


def test_it_requires_an_existing_meter_for_metered_prices(client: stripe.StripeClient) -> None:
    product = client.v1.products.create(params={"name": "GPU time"})
    for recurring in ({"interval": "month", "usage_type": "metered"}, {"interval": "month", "meter": "mtr_nope"}):
        with pytest.raises(stripe.InvalidRequestError) as err:
            client.v1.prices.create(
                params={"product": product.id, "currency": "usd", "unit_amount": 1, "recurring": cast(Any, recurring)}
            )
        assert err.value.http_status == 400
        assert err.value.param == "recurring[meter]"


def test_it_refuses_a_second_meter_for_an_event_name(client: stripe.StripeClient) -> None:
    params: Any = {"display_name": "GPU", "event_name": "gpu_seconds", "default_aggregation": {"formula": "sum"}}
    client.v1.billing.meters.create(params=params)
    with pytest.raises(stripe.InvalidRequestError) as err:
        client.v1.billing.meters.create(params=params)
    assert err.value.param == "event_name"


def test_it_deduplicates_meter_events_on_identifier(server: StripeServer, client: stripe.StripeClient) -> None:
    cat = catalog(client)
    accepted = send(client, cat.customer, "5", identifier="run-1:0")
    assert accepted.identifier == "run-1:0"
    assert accepted.object == "billing.meter_event"
    assert accepted.payload.to_dict() == {"stripe_customer_id": cat.customer, "value": "5"}
    with pytest.raises(stripe.InvalidRequestError) as err:
        send(client, cat.customer, "5", identifier="run-1:0")
    assert err.value.code == "resource_already_exists"
    assert "run-1:0" in str(err.value.user_message)
    assert server.meter_total(event_name="gpu_seconds") == 5
    assert server.meter_total(event_name="gpu_seconds", customer="cus_other") == 0
    [recorded] = server.events("gpu_seconds")
    assert recorded == {
        "identifier": "run-1:0",
        "event_name": "gpu_seconds",
        "customer": cat.customer,
        "value": 5,
        "timestamp": accepted.timestamp,
    }


def test_it_replays_an_idempotent_request_without_counting_it_twice(
    server: StripeServer, client: stripe.StripeClient
) -> None:
    cat = catalog(client)
    first = send(client, cat.customer, "3", idempotency_key="k-1")  # no identifier: the server makes one up
    again = send(client, cat.customer, "3", idempotency_key="k-1")
    assert again.identifier == first.identifier
    assert again.last_response is not None
    assert again.last_response.headers["Idempotent-Replayed"] == "true"
    assert server.meter_total(event_name="gpu_seconds") == 3
    assert len(server.events()) == 1
    with pytest.raises(stripe.IdempotencyError) as err:
        send(client, cat.customer, "4", idempotency_key="k-1")
    assert err.value.http_status == 400
    assert server.meter_total(event_name="gpu_seconds") == 3


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"customer": "cus_unknown"}, "payload[stripe_customer_id]"),
        ({"value": "1.5"}, "payload[value]"),
        ({"value": "lots"}, "payload[value]"),
        ({"timestamp": T0 - 35 * DAY - 1}, "timestamp"),
        ({"timestamp": T0 + 301}, "timestamp"),
        ({"event_name": "unmetered"}, "event_name"),
    ],
)
def test_it_rejects_invalid_meter_events(
    server: StripeServer, client: stripe.StripeClient, change: dict[str, Any], param: str
) -> None:
    cat = catalog(client)
    server.clock = lambda: T0
    change = dict(change)
    with pytest.raises(stripe.InvalidRequestError) as err:
        send(client, change.pop("customer", cat.customer), change.pop("value", "1"), **change)
    assert err.value.http_status == 400
    assert err.value.param == param
    assert server.events() == []


def test_it_accepts_the_edges_of_the_timestamp_window(server: StripeServer, client: stripe.StripeClient) -> None:
    cat = catalog(client)
    server.clock = lambda: T0
    send(client, cat.customer, timestamp=T0 - 35 * DAY)
    send(client, cat.customer, timestamp=T0 + 300)
    assert [e["timestamp"] for e in server.events()] == [T0 - 35 * DAY, T0 + 300]


def test_it_sums_event_summaries(server: StripeServer, client: stripe.StripeClient) -> None:
    cat = catalog(client)
    server.clock = lambda: T0 + 3 * 3600
    for offset, value in ((10, "3"), (3599, "1"), (3600, "4"), (7200, "100")):
        send(client, cat.customer, value, timestamp=T0 + offset)
    summaries = client.v1.billing.meters.event_summaries
    whole = summaries.list(cat.meter, params={"customer": cat.customer, "start_time": T0, "end_time": T0 + 7200})
    [summary] = whole.data
    assert summary.object == "billing.meter_event_summary"
    assert summary.meter == cat.meter
    assert (summary.aggregated_value, summary.start_time, summary.end_time) == (8, T0, T0 + 7200)
    hourly = summaries.list(
        cat.meter,
        params={"customer": cat.customer, "start_time": T0, "end_time": T0 + 7200, "value_grouping_window": "hour"},
    )
    assert [s.aggregated_value for s in hourly.data] == [4, 4]
    with pytest.raises(stripe.InvalidRequestError) as err:
        summaries.list(cat.meter, params={"customer": cat.customer, "start_time": T0 + 1, "end_time": T0 + 7200})
    assert err.value.param == "start_time"


def test_it_prices_metered_usage_in_the_invoice_preview(server: StripeServer, client: stripe.StripeClient) -> None:
    server.clock = lambda: T0
    cat = catalog(client)
    send(client, cat.customer, "9", timestamp=T0 - 60)  # before the subscription's period: not billed
    send(client, cat.customer, "2", timestamp=T0)
    send(client, cat.customer, "3", timestamp=T0 + 100)
    invoice = client.v1.invoices.create_preview(
        params={
            "customer": cat.customer,
            "subscription": cat.subscription,
            "subscription_details": {"proration_behavior": "none"},
        }
    )
    assert invoice.object == "invoice"
    assert invoice.status == "draft"
    assert invoice.currency == "usd"
    [line] = invoice.lines.data
    assert line.quantity == 5
    assert line.amount == 3  # 5 x 0.5 = 2.5 cents, rounded half up (half-even would give 2)
    assert line.pricing is not None
    assert line.pricing.price_details is not None
    assert line.pricing.price_details.price == cat.price
    assert (invoice.subtotal, invoice.total, invoice.amount_due) == (3, 3, 3)
    assert invoice.period_start == T0
    assert (line.period.start, line.period.end) == (T0, invoice.period_end)
    assert invoice.period_end == T0 + 31 * DAY  # 2027-01-15T08:00Z + 1 calendar month
    assert client.v1.invoices.create_preview(params={"customer": cat.customer}).total == 3


def test_it_manages_subscriptions_and_their_items(client: stripe.StripeClient) -> None:
    cat = catalog(client)
    sub = client.v1.subscriptions.retrieve(cat.subscription)
    [item] = sub.items.data
    assert sub.status == "active"
    assert item.id.startswith("si_")
    assert "quantity" not in item
    assert item.price.id == cat.price
    assert item.current_period_end > item.current_period_start
    seat = client.v1.prices.create(
        params={
            "product": cast(str, item.price.product),
            "currency": "usd",
            "unit_amount": 900,
            "recurring": {"interval": "month"},
        }
    )
    added = client.v1.subscription_items.create(
        params={"subscription": cat.subscription, "price": seat.id, "quantity": 2}
    )
    assert added.quantity == 2
    with pytest.raises(stripe.InvalidRequestError):
        client.v1.subscription_items.create(params={"subscription": cat.subscription, "price": seat.id})
    listed = client.v1.subscription_items.list(params={"subscription": cat.subscription})
    assert {i.id for i in listed.data} == {item.id, added.id}
    updated = client.v1.subscriptions.update(
        cat.subscription, params={"cancel_at_period_end": True, "metadata": {"a": "b"}}
    )
    assert updated.cancel_at == item.current_period_end
    assert updated.metadata.to_dict() == {"a": "b"}
    assert client.v1.subscriptions.cancel(cat.subscription).status == "canceled"
    with pytest.raises(stripe.InvalidRequestError) as err:
        client.v1.invoices.create_preview(params={"subscription": cat.subscription})
    assert err.value.code == "invoice_upcoming_none"


def test_it_rate_limits_meter_events_with_a_token_bucket() -> None:
    with_limit = StripeServer(api_key=KEY, rate_per_second=0.001, burst=2).start()
    try:
        client = sdk(with_limit)
        cat = catalog(client)
        send(client, cat.customer)
        send(client, cat.customer)
        with pytest.raises(stripe.RateLimitError) as err:
            send(client, cat.customer)
        assert err.value.http_status == 429
        # RateLimitError does not copy the code onto the exception (InvalidRequestError does); the envelope has it.
        assert err.value.error is not None
        assert err.value.error.code == "rate_limit"
        client.v1.customers.create(params={"name": "other endpoints are not throttled"})
        assert with_limit.meter_total(event_name="gpu_seconds") == 2
    finally:
        with_limit.stop()


def test_it_injects_failures_and_outages(server: StripeServer, client: stripe.StripeClient) -> None:
    cat = catalog(client)
    server.fail_next = [429, 500, 503]
    with pytest.raises(stripe.RateLimitError):
        send(client, cat.customer)
    for status in (500, 503):
        with pytest.raises(stripe.APIError) as err:
            send(client, cat.customer)
        assert err.value.http_status == status
    send(client, cat.customer)
    assert server.meter_total(event_name="gpu_seconds") == 1
    server.down = True
    with pytest.raises(stripe.APIError) as outage:
        client.v1.customers.retrieve(cat.customer)
    assert outage.value.http_status == 503
    assert outage.value.error is not None
    assert outage.value.error.type == "api_error"
    server.down = False
    assert client.v1.customers.retrieve(cat.customer).id == cat.customer


def test_a_fault_window_answers_500s_then_holds_and_drops_requests_until_it_ends(server: StripeServer) -> None:
    client = sdk(server)
    cat = catalog(client)
    server.fault = "error"
    with pytest.raises(stripe.APIError) as err:
        send(client, cat.customer)
    assert err.value.http_status == 500
    with pytest.raises(stripe.APIError):
        client.v1.customers.retrieve(cat.customer)  # every request, not only meter events
    assert server.meter_total(event_name="gpu_seconds") == 0

    server.fault, server.hang = "timeout", 5.0
    slow = stripe.StripeClient(
        KEY,
        base_addresses={"api": server.url},
        max_network_retries=0,
        http_client=stripe.RequestsClient(timeout=(1, 30)),
    )
    threading.Timer(0.5, lambda: setattr(server, "fault", None)).start()  # the window ends while it is held
    began = time.monotonic()
    with pytest.raises(stripe.APIConnectionError):
        send(slow, cat.customer)
    assert 0.4 <= time.monotonic() - began < 4  # held until the window ended, then dropped unanswered
    assert server.meter_total(event_name="gpu_seconds") == 0
    assert server.faulted == 3

    server.fault, server.hang = "timeout", 0.3  # never cleared: dropped once ``hang`` passes
    began = time.monotonic()
    with pytest.raises(stripe.APIConnectionError):
        send(slow, cat.customer)
    assert 0.25 <= time.monotonic() - began < 3
    server.fault = None
    send(client, cat.customer, "4")
    assert server.meter_total(event_name="gpu_seconds") == 4


def test_it_lets_the_sdk_retry_a_server_error_with_the_same_idempotency_key(server: StripeServer) -> None:
    client = sdk(server, retries=2)
    cat = catalog(client)
    server.fail_next = [500]
    before = server.requests
    send(client, cat.customer, "7", identifier="retried")
    assert server.requests - before == 2
    assert server.meter_total(event_name="gpu_seconds") == 7


def test_it_rejects_a_bad_api_key(server: StripeServer) -> None:
    with pytest.raises(stripe.AuthenticationError) as err:
        sdk(server, key="sk_test_wrong_key_123").v1.customers.list()
    assert err.value.http_status == 401
    assert "Invalid API Key" in str(err.value.user_message)


def test_it_counts_concurrent_events_exactly_once(server: StripeServer, client: stripe.StripeClient) -> None:
    cat = catalog(client)
    refused: list[str | None] = []

    def report(worker: int) -> None:
        own = sdk(server)
        for n in range(25):  # identifiers 0..4 are sent twice
            try:
                send(own, cat.customer, "2", identifier=f"w{worker}-{n % 20}")
            except stripe.InvalidRequestError as err:
                refused.append(err.code)

    threads = [threading.Thread(target=report, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert refused == ["resource_already_exists"] * 8 * 5
    assert server.meter_total(event_name="gpu_seconds") == 8 * 20 * 2


def test_it_parses_stripe_form_encoding() -> None:
    encoded = "items[0][price]=p1&items[1][price]=p2&items[1][quantity]=3&k[]=a&k[]=b&metadata[0]=zero&name=A+B%26C"
    assert parse_form(encoded) == {
        "items": [{"price": "p1"}, {"price": "p2", "quantity": "3"}],
        "k": ["a", "b"],
        "metadata": {"0": "zero"},
        "name": "A B&C",
    }


def test_it_signs_webhooks_the_sdk_verifies() -> None:
    payload = event("invoice.paid", {"id": "in_123", "object": "invoice", "amount_paid": 300})
    body, header = signed_webhook(payload, "whsec_test")
    verified = stripe.Webhook.construct_event(body, header, "whsec_test")
    assert verified.type == "invoice.paid"
    assert verified.id.startswith("evt_")
    assert verified.data.object["id"] == "in_123"
    assert verified.api_version == "2026-10-28.endive"
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(body.replace(b"300", b"900"), header, "whsec_test")
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(body, header, "whsec_other")
    stale_body, stale = signed_webhook(payload, "whsec_test", timestamp=int(time.time()) - 3600)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(stale_body, stale, "whsec_test")


def test_it_runs_as_a_standalone_process() -> None:
    root = ROOT
    command = [sys.executable, "-m", "tests.fakes.stripe", "--port", "0", "--rate", "1000"]
    proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[4]
        client = stripe.StripeClient(KEY, base_addresses={"api": url}, max_network_retries=0)
        assert client.v1.customers.create(params={"name": "bench"}).id.startswith("cus_")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_it_allows_20_items_per_subscription_and_removes_one(client: stripe.StripeClient) -> None:
    cat = catalog(client)
    product = client.v1.products.create(params={"name": "more GPU time"})
    prices = []
    for n in range(20):
        meter = client.v1.billing.meters.create(
            params={"display_name": f"m{n}", "event_name": f"m{n}", "default_aggregation": {"formula": "sum"}}
        )
        recurring: Any = {"interval": "month", "usage_type": "metered", "meter": meter.id}
        prices.append(
            client.v1.prices.create(
                params={"product": product.id, "currency": "usd", "unit_amount": 1, "recurring": recurring}
            ).id
        )
    items = [
        client.v1.subscription_items.create(params={"subscription": cat.subscription, "price": p}) for p in prices[:19]
    ]
    with pytest.raises(stripe.InvalidRequestError, match="at most 20 items"):
        client.v1.subscription_items.create(params={"subscription": cat.subscription, "price": prices[19]})
    with pytest.raises(stripe.InvalidRequestError, match="at most 20 items"):
        client.v1.subscriptions.create(params={"customer": cat.customer, "items": [{"price": cat.price}] * 21})
    assert client.v1.subscription_items.delete(items[0].id).deleted
    client.v1.subscription_items.create(params={"subscription": cat.subscription, "price": prices[19]})
    listed = client.v1.subscription_items.list(params={"subscription": cat.subscription, "limit": 100})
    assert len(listed.data) == 20


def test_it_finalizes_each_period_invoice_an_hour_after_it_ends(
    server: StripeServer, client: stripe.StripeClient
) -> None:
    server.clock = lambda: T0
    cat = catalog(client)
    meter = client.v1.billing.meters.create(
        params={"display_name": "other", "event_name": "other", "default_aggregation": {"formula": "sum"}}
    )
    recurring: Any = {"interval": "month", "usage_type": "metered", "meter": meter.id}
    product = client.v1.prices.retrieve(cat.price).product
    other = client.v1.prices.create(
        params={"product": cast(str, product), "currency": "usd", "unit_amount": 1, "recurring": recurring}
    )
    anchor = T0 + 3 * DAY  # a later anchor: the first period runs from the (backdated) start to it
    backdated = client.v1.subscriptions.create(
        params={
            "customer": cat.customer,
            "items": [{"price": other.id}],
            "backdate_start_date": T0 - DAY,
            "billing_cycle_anchor": anchor,
            "proration_behavior": "none",
        }
    )
    [item] = backdated.items.data
    assert (item.current_period_start, item.current_period_end) == (T0 - DAY, anchor)
    send(client, cat.customer, "4", timestamp=T0)
    server.clock = lambda: T0 + 31 * DAY + 1800  # the first period ended half an hour ago: not final yet
    assert client.v1.invoices.list(params={"subscription": cat.subscription}).data == []
    send(client, cat.customer, "6", timestamp=T0 + 10)  # within the grace: still on the period's invoice
    server.clock = lambda: T0 + 31 * DAY + 3601
    send(client, cat.customer, "5", timestamp=T0 + 20)  # after it: in the meter, on no invoice
    [invoice] = client.v1.invoices.list(params={"subscription": cat.subscription}).data
    assert (invoice.status, invoice.period_start, invoice.period_end) == ("open", T0, T0 + 31 * DAY)
    assert invoice.status_transitions.finalized_at == T0 + 31 * DAY + 3600
    [line] = invoice.lines.data
    assert (line.quantity, line.amount, invoice.total) == (10, 5, 5)
    assert client.v1.invoices.retrieve(invoice.id).total == 5
    assert server.meter_total(event_name="gpu_seconds") == 15
