"""An in-memory Stripe API v1 server for tests and benchmarks.

It speaks Stripe's wire protocol (form-encoded bodies such as ``items[0][price]=...``, JSON answers, the
``{"error": {...}}`` envelope, ``Idempotency-Key``), so product code is exercised through the official ``stripe`` SDK
pointed at it with ``base_addresses={"api": server.url}`` instead of through mocks. It covers the slice of Stripe that
usage-based billing needs: customers, products, prices, billing meters, meter events and their summaries,
subscriptions and their items (at most 20 per subscription, like Stripe; a billing cycle anchor and a backdated
start), invoice previews, and the invoices Stripe finalizes when a period ends (an hour's grace after it, during
which usage for the period still counts). Outages, rate limits and scripted failures can be injected, and so can a
fault window (``fault``): every request answered 500 (``"error"``), or held without an answer until the window ends
(at most ``hang`` seconds) and its connection then dropped (``"timeout"``), as a Stripe that stopped answering.

Run it alone with ``python -m tests.fakes.stripe --port 12111 [--rate 1000]``.
"""

from __future__ import annotations

import argparse
import calendar
import hashlib
import json
import re
import secrets
import string
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qsl

import stripe

API_VERSION = "2026-10-28.endive"
METER_EVENTS = "/v1/billing/meter_events"
DAY = 86_400
SUBSCRIPTION_ITEMS = 20  # Stripe's maximum items per subscription
INVOICE_GRACE = 3600  # Stripe finalizes a period's invoice an hour after the period ends (the default grace)
IDEMPOTENCY_KEYS = 1_000_000  # every SDK POST carries a key; this bounds memory in long benchmarks
Obj = dict[str, Any]


class StripeError(Exception):
    """A failure rendered as Stripe's error envelope; the SDK picks its exception class from the status and type."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error", **extra: str | None) -> None:
        super().__init__(message)
        self.status = status
        fields = {"type": type, "code": extra.get("code"), "message": message, "param": extra.get("param")}
        self.body: Obj = {"error": {k: v for k, v in fields.items() if v is not None}}


def missing(param: str) -> StripeError:
    return StripeError(400, f"Missing required param: {param}.", code="parameter_missing", param=param)


def no_such(kind: str, id: str, param: str | None = None) -> StripeError:
    # A dangling reference in a request body is a 400; an unknown id in the URL is a 404.
    return StripeError(400 if param else 404, f"No such {kind}: '{id}'", code="resource_missing", param=param or "id")


def new_id(prefix: str) -> str:
    return f"{prefix}_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(24))


def parse_form(encoded: str) -> Obj:
    """Decode Stripe's bracket notation: ``a[b][0][c]=v`` and ``a[]=v`` become nested dicts and lists of strings."""
    root: Obj = {}
    for key, value in parse_qsl(encoded, keep_blank_values=True):
        head, bracket, rest = key.partition("[")
        parts = [head, *re.findall(r"\[([^\]]*)\]", bracket + rest)]
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part or str(len(node)), {})
            if not isinstance(node, dict):
                raise StripeError(400, f"Invalid value for {key}: {head} is both a scalar and a hash.", param=head)
        node[parts[-1] or str(len(node))] = value  # "[]" appends
    return cast(Obj, _listify(root))


def _listify(node: Any, key: str = "") -> Any:
    # Hashes whose keys are all indexes are arrays, except metadata, where "0" is a legitimate key.
    if not isinstance(node, dict):
        return node
    out = {k: _listify(v, k) for k, v in node.items()}
    if out and key != "metadata" and all(k.isdigit() for k in out):
        return [out[k] for k in sorted(out, key=int)]
    return out


def as_int(params: Obj, name: str, default: int | None = None) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise missing(name)
        return default
    if not isinstance(raw, str) or not re.fullmatch(r"-?\d+", raw):
        raise StripeError(400, f"Invalid integer: {raw}", code="parameter_invalid_integer", param=name)
    return int(raw)


def as_bool(params: Obj, name: str, default: bool) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    if raw not in ("true", "false"):
        raise StripeError(400, f"Invalid boolean: {raw}", code="parameter_invalid_boolean", param=name)
    return bool(raw == "true")


def metadata(old: Obj, new: Any) -> Obj:
    # Stripe merges metadata on update; an empty value unsets a key and metadata="" clears them all.
    if new is None or new == "":
        return old if new is None else {}
    if not isinstance(new, dict):
        raise StripeError(400, "Invalid hash", param="metadata")
    return {k: v for k, v in {**old, **new}.items() if v != ""}


def add_interval(ts: int, interval: str, count: int) -> int:
    """Move a timestamp by whole billing intervals, clamping the day like Stripe does (Jan 31 + 1 month = Feb 28)."""
    if interval in ("day", "week"):
        return ts + count * DAY * (7 if interval == "week" else 1)
    dt = datetime.fromtimestamp(ts, UTC)
    years, month0 = divmod(dt.month - 1 + count * (12 if interval == "year" else 1), 12)
    year, month = dt.year + years, month0 + 1
    return int(dt.replace(year=year, month=month, day=min(dt.day, calendar.monthrange(year, month)[1])).timestamp())


class TokenBucket:
    def __init__(self, rate: float, capacity: int) -> None:
        self.rate, self.capacity = rate, capacity
        self.tokens, self.last = float(capacity), time.monotonic()

    def take(self) -> bool:
        # Real time, not StripeServer.clock: tests move the clock to test event timestamps, not to refill the bucket.
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class StripeServer:
    """Stateful fake of Stripe's v1 API. Each request runs under one lock, so any number of clients may share it."""

    def __init__(
        self,
        *,
        api_key: str = "sk_test_ladder",
        rate_per_second: float | None = None,
        burst: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.api_key = api_key
        self.down = False
        self.fail_next: list[int] = []
        self.fault: str | None = None  # None, "error" (500s) or "timeout" (held, then dropped): a fault window
        self.hang = 25.0  # the longest a request is held under "timeout" (the product's read timeout is 20 s)
        self.faulted = 0  # requests answered 500 or dropped by a fault window
        self.requests = 0
        self.clock: Callable[[], float] = time.time
        self._lock = threading.Lock()
        self._bucket = TokenBucket(rate_per_second, burst or max(1, int(rate_per_second))) if rate_per_second else None
        self.customers: dict[str, Obj] = {}
        self.products: dict[str, Obj] = {}
        self.prices: dict[str, Obj] = {}
        self.meters: dict[str, Obj] = {}
        self.subscriptions: dict[str, Obj] = {}
        self.items: dict[str, Obj] = {}
        self.checkout_sessions: dict[str, Obj] = {}
        self.setup_intents: dict[str, Obj] = {}
        self.payment_methods: dict[str, Obj] = {}
        self._events: list[Obj] = []
        self._by_meter: dict[tuple[str, str], list[Obj]] = {}  # (event name, customer) -> its events
        self.invoices: dict[str, Obj] = {}
        self.invoice_grace = INVOICE_GRACE
        self._identifiers: set[str] = set()
        self._idempotent: dict[str, tuple[tuple[str, str, Obj], bytes]] = {}
        routes: list[tuple[str, str, Callable[..., Obj]]] = [
            ("POST", r"/v1/customers", self._create_customer),
            ("GET", r"/v1/customers", lambda p: self._list(self.customers, p, "/v1/customers", email=p.get("email"))),
            ("GET", r"/v1/customers/([^/]+)", lambda p, id: self._get(self.customers, "customer", id)),
            ("POST", r"/v1/customers/([^/]+)", self._update_customer),
            ("POST", r"/v1/checkout/sessions", self._create_checkout_session),
            (
                "GET",
                r"/v1/checkout/sessions/([^/]+)",
                lambda p, id: self._get(self.checkout_sessions, "checkout.session", id),
            ),
            ("GET", r"/v1/setup_intents/([^/]+)", lambda p, id: self._get(self.setup_intents, "setup_intent", id)),
            (
                "GET",
                r"/v1/payment_methods/([^/]+)",
                lambda p, id: self._get(self.payment_methods, "payment_method", id),
            ),
            ("POST", r"/v1/products", self._create_product),
            ("GET", r"/v1/products", lambda p: self._list(self.products, p, "/v1/products")),
            ("GET", r"/v1/products/([^/]+)", lambda p, id: self._get(self.products, "product", id)),
            ("POST", r"/v1/prices", self._create_price),
            ("GET", r"/v1/prices", self._list_prices),
            ("GET", r"/v1/prices/([^/]+)", lambda p, id: self._get(self.prices, "price", id)),
            ("POST", r"/v1/billing/meters", self._create_meter),
            ("GET", r"/v1/billing/meters", lambda p: self._list(self.meters, p, "/v1/billing/meters")),
            ("GET", r"/v1/billing/meters/([^/]+)", lambda p, id: self._get(self.meters, "billing.meter", id)),
            ("GET", r"/v1/billing/meters/([^/]+)/event_summaries", self._event_summaries),
            ("POST", METER_EVENTS, self._create_meter_event),
            ("POST", r"/v1/subscriptions", self._create_subscription),
            ("GET", r"/v1/subscriptions/([^/]+)", lambda p, id: self._render_sub(self._sub(id))),
            ("POST", r"/v1/subscriptions/([^/]+)", self._update_subscription),
            ("DELETE", r"/v1/subscriptions/([^/]+)", self._cancel_subscription),
            ("POST", r"/v1/subscription_items", self._create_item),
            ("GET", r"/v1/subscription_items", self._list_items),
            ("DELETE", r"/v1/subscription_items/([^/]+)", self._delete_item),
            ("POST", r"/v1/invoices/create_preview", self._preview_invoice),
            ("GET", r"/v1/invoices", self._list_invoices),
            ("GET", r"/v1/invoices/([^/]+)", lambda p, id: self._get(self._invoices_due(), "invoice", id)),
        ]
        self._routes = [(method, re.compile(pattern), handler) for method, pattern, handler in routes]
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.app = self
        self.url = f"http://{host}:{self._httpd.server_address[1]}"
        self._thread: threading.Thread | None = None

    # --- lifecycle and inspection ----------------------------------------------------------------------------

    def start(self) -> StripeServer:
        # A short poll interval, so that stop() (which waits for the next poll) takes 50 ms rather than 500.
        self._thread = threading.Thread(target=self.serve_forever, name="stripe-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def meter_total(self, *, event_name: str, customer: str | None = None) -> int:
        with self._lock:
            return sum(
                e["value"] for e in self._events if e["event_name"] == event_name and customer in (None, e["customer"])
            )

    def events(self, event_name: str | None = None) -> list[Obj]:
        with self._lock:
            return [
                {k: v for k, v in e.items() if not k.startswith("_")}
                for e in self._events
                if event_name in (None, e["event_name"])
            ]

    def event_alter(self, identifier: str, value: int | None = None) -> None:
        """Change an event's value, or remove it with ``value=None``: what a person editing Stripe by hand, or a
        bug on either side, would leave behind (reconciliation must find it)."""
        with self._lock:
            found = next(e for e in self._events if e["identifier"] == identifier)
            if value is None:
                self._events.remove(found)
                self._by_meter[(found["event_name"], found["customer"])].remove(found)
            else:
                found["value"] = value

    # --- request handling ------------------------------------------------------------------------------------

    def handle(self, method: str, target: str, body: str, headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
        """Answer one request with (status, JSON body, extra headers); ``headers`` has lower-case names."""
        extra: dict[str, str] = {}
        with self._lock:  # held while serialising too, so no other request mutates an object being written out
            self.requests += 1
            try:
                return 200, self._respond(method, target, body, headers, extra), extra
            except StripeError as err:
                return err.status, json.dumps(err.body).encode(), extra
            except Exception as exc:  # a bug here must reach the client as a 500, not as a dropped connection
                return 500, json.dumps(StripeError(500, repr(exc), type="api_error").body).encode(), extra

    def _respond(self, method: str, target: str, body: str, headers: dict[str, str], extra: dict[str, str]) -> bytes:
        path, _, query = target.partition("?")
        if self.down:
            raise StripeError(503, "Stripe is temporarily unavailable (down=True).", type="api_error")
        if self.fault == "error":
            self.faulted += 1
            raise StripeError(500, "An unexpected error occurred (fault window).", type="api_error")
        self._authenticate(headers.get("authorization", ""))
        if method == "POST" and path == METER_EVENTS:
            self._throttle()
        params = parse_form(body if method == "POST" else query)
        # Stripe keys idempotency on POSTs only and saves no result when a request failed validation or was turned
        # away (429, outage), so a client retrying with the same key after such an error gets a fresh attempt.
        key = headers.get("idempotency-key") if method == "POST" else None
        if not key:
            return json.dumps(self._dispatch(method, path, params)).encode()
        extra["Idempotency-Key"] = key
        if key in self._idempotent:
            fingerprint, stored = self._idempotent[key]
            if fingerprint != (method, path, params):
                message = (
                    "Keys for idempotent requests can only be used with the same parameters they were first used "
                    f"with. Try using a key other than '{key}' if you meant to execute a different request."
                )
                raise StripeError(400, message, type="idempotency_error")
            extra["Idempotent-Replayed"] = "true"
            return stored
        data = json.dumps(self._dispatch(method, path, params)).encode()
        self._idempotent[key] = ((method, path, params), data)
        if len(self._idempotent) > IDEMPOTENCY_KEYS:  # Stripe forgets keys after 24 hours; we forget the oldest
            del self._idempotent[next(iter(self._idempotent))]
        return data

    def _authenticate(self, authorization: str) -> None:
        scheme, _, key = authorization.partition(" ")
        if scheme != "Bearer" or not key:
            raise StripeError(401, "You did not provide an API key. Send it as 'Authorization: Bearer <key>'.")
        if key != self.api_key:
            raise StripeError(401, f"Invalid API Key provided: {key[:8]}{'*' * max(0, len(key) - 12)}{key[-4:]}")

    def _throttle(self) -> None:
        status = self.fail_next.pop(0) if self.fail_next else None
        if status is None and self._bucket is not None and not self._bucket.take():
            status = 429
        if status == 429:
            raise StripeError(429, "Request rate limit exceeded. Retry with exponential backoff.", code="rate_limit")
        if status is not None:
            kind = "api_error" if status >= 500 else "invalid_request_error"
            raise StripeError(status, f"Injected failure {status} (fail_next).", type=kind)

    def _dispatch(self, method: str, path: str, params: Obj) -> Obj:
        for route_method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match and route_method == method:
                return handler(params, *match.groups())
        raise StripeError(404, f"Unrecognized request URL ({method}: {path}).", code="resource_missing")

    # --- helpers ---------------------------------------------------------------------------------------------

    def _now(self) -> int:
        return int(self.clock())

    def _new(self, prefix: str, object: str, **fields: Any) -> Obj:
        return {"id": new_id(prefix), "object": object, "created": self._now(), "livemode": False, **fields}

    @staticmethod
    def _get(store: dict[str, Obj], kind: str, id: str) -> Obj:
        if id not in store:
            raise no_such(kind, id)
        return store[id]

    @staticmethod
    def _ref(store: dict[str, Obj], kind: str, id: Any, param: str) -> Obj:
        """Resolve an id named in a request body."""
        if not id or not isinstance(id, str):
            raise missing(param)
        if id not in store:
            raise no_such(kind, str(id), param)
        return store[id]

    @staticmethod
    def _page(items: list[Obj], params: Obj, url: str) -> Obj:
        limit = as_int(params, "limit", 10)
        if not 1 <= limit <= 100:
            raise StripeError(400, "Limit must be between 1 and 100.", param="limit")
        start = 0
        if after := params.get("starting_after"):
            ids = [item["id"] for item in items]
            if after not in ids:
                raise no_such("object", after, "starting_after")
            start = ids.index(after) + 1
        return {
            "object": "list",
            "data": items[start : start + limit],
            "has_more": start + limit < len(items),
            "url": url,
        }

    def _list(self, store: dict[str, Obj], params: Obj, url: str, **filters: Any) -> Obj:
        # Stripe lists newest first.
        items = [o for o in reversed(store.values()) if all(v is None or o.get(k) == v for k, v in filters.items())]
        return self._page(items, params, url)

    # --- catalog ---------------------------------------------------------------------------------------------

    def _create_customer(self, p: Obj) -> Obj:
        customer = self._new("cus", "customer", name=p.get("name"), email=p.get("email"), phone=p.get("phone"))
        customer.update(description=p.get("description"), balance=0, currency=None, delinquent=False)
        customer.update(metadata=metadata({}, p.get("metadata")), invoice_settings={"default_payment_method": None})
        self.customers[customer["id"]] = customer
        return customer

    def _update_customer(self, p: Obj, id: str) -> Obj:
        customer = self._get(self.customers, "customer", id)
        default = (p.get("invoice_settings") or {}).get("default_payment_method")
        if default is not None:
            method = self._ref(
                self.payment_methods, "payment_method", default, "invoice_settings[default_payment_method]"
            )
            if method.get("customer") != id:
                raise StripeError(400, f"The payment method {default} is not attached to customer {id}.")
            customer["invoice_settings"]["default_payment_method"] = default
        for field in ("name", "email", "description"):
            if field in p:
                customer[field] = p[field]
        return customer

    # --- collecting a payment method (Checkout in setup mode) ----------------------------------------------

    def _create_checkout_session(self, p: Obj) -> Obj:
        if p.get("mode") != "setup":
            raise StripeError(400, "Only mode=setup is served by this server.", param="mode")
        for required in ("success_url", "currency"):
            if not p.get(required):
                raise missing(required)
        customer = self._ref(self.customers, "customer", p.get("customer"), "customer")
        session = self._new("cs_test", "checkout.session", mode="setup", customer=customer["id"])
        session.update(
            status="open",
            currency=p["currency"],
            success_url=p["success_url"],
            cancel_url=p.get("cancel_url"),
            setup_intent=None,
            url=f"{self.url}/pay/{session['id']}",
            metadata=metadata({}, p.get("metadata")),
        )
        self.checkout_sessions[session["id"]] = session
        return session

    def checkout_complete(self, session_id: str, *, brand: str = "visa", last4: str = "4242") -> Obj:
        """What happens when the customer enters a card on Stripe's page: a payment method attached to the
        customer, a succeeded SetupIntent, the session complete. Returns the ``checkout.session.completed`` event
        Stripe would deliver (sign it with ``signed_webhook``)."""
        with self._lock:
            session = self._get(self.checkout_sessions, "checkout.session", session_id)
            method = self._new("pm", "payment_method", type="card", customer=session["customer"])
            method["card"] = {"brand": brand, "last4": last4, "exp_month": 12, "exp_year": 2030}
            self.payment_methods[method["id"]] = method
            intent = self._new("seti", "setup_intent", status="succeeded", customer=session["customer"])
            intent.update(payment_method=method["id"], usage="off_session")
            self.setup_intents[intent["id"]] = intent
            session.update(status="complete", setup_intent=intent["id"])
            return event("checkout.session.completed", dict(session))

    def _create_product(self, p: Obj) -> Obj:
        if not p.get("name"):
            raise missing("name")
        product = self._new("prod", "product", active=as_bool(p, "active", True), name=p["name"], default_price=None)
        product.update(description=p.get("description"), metadata=metadata({}, p.get("metadata")))
        product["unit_label"] = p.get("unit_label")  # shown beside the quantity on invoices (at most 12 characters)
        if product["unit_label"] is not None and len(product["unit_label"]) > 12:
            raise StripeError(400, "unit_label must be at most 12 characters.", param="unit_label")
        self.products[product["id"]] = product
        return product

    def _create_price(self, p: Obj) -> Obj:
        product = self._ref(self.products, "product", p.get("product"), "product")
        if not p.get("currency"):
            raise missing("currency")
        if "unit_amount" in p and "unit_amount_decimal" in p:
            raise StripeError(400, "You may only specify one of these parameters: unit_amount, unit_amount_decimal.")
        if "unit_amount" in p:
            unit_amount: int | None = as_int(p, "unit_amount")
            decimal = str(unit_amount)
        elif "unit_amount_decimal" in p:
            decimal = p["unit_amount_decimal"]  # kept as the string it came as: Stripe echoes it, never a float
            try:
                amount = Decimal(decimal)
            except InvalidOperation:
                raise StripeError(400, f"Invalid decimal: {decimal}", param="unit_amount_decimal") from None
            unit_amount = int(amount) if amount == amount.to_integral_value() else None
        else:
            raise missing("unit_amount")
        recurring = p.get("recurring")
        if isinstance(recurring, dict):
            if recurring.get("interval") not in ("day", "week", "month", "year"):
                raise StripeError(
                    400, "recurring[interval] must be day, week, month or year.", param="recurring[interval]"
                )
            usage_type, meter = recurring.get("usage_type", "licensed"), recurring.get("meter")
            if usage_type == "metered" or meter:
                # Since API version 2025-03-31.basil a metered price must be backed by a billing meter.
                self._ref(self.meters, "billing.meter", meter, "recurring[meter]")
            recurring = {"interval": recurring["interval"], "interval_count": as_int(recurring, "interval_count", 1)}
            recurring.update(meter=meter, trial_period_days=None, usage_type=usage_type)
        price = self._new("price", "price", active=as_bool(p, "active", True), billing_scheme="per_unit")
        price.update(currency=p["currency"].lower(), lookup_key=None, nickname=p.get("nickname"), product=product["id"])
        price.update(recurring=recurring, type="recurring" if recurring else "one_time")
        price.update(tax_behavior=p.get("tax_behavior", "unspecified"), unit_amount=unit_amount)
        price.update(unit_amount_decimal=decimal, metadata=metadata({}, p.get("metadata")))
        if key := p.get("lookup_key"):
            holder = next((o for o in self.prices.values() if o["lookup_key"] == key), None)
            if holder is not None and not as_bool(p, "transfer_lookup_key", False):
                message = f"A price (`{holder['id']}`) already uses that lookup key."
                raise StripeError(400, message, code="lookup_key_already_exists", param="lookup_key")
            if holder is not None:
                holder["lookup_key"] = None
            price["lookup_key"] = key
        self.prices[price["id"]] = price
        return price

    def _list_prices(self, p: Obj) -> Obj:
        keys = p.get("lookup_keys")
        keys = [keys] if isinstance(keys, str) else keys
        active = as_bool(p, "active", True) if "active" in p else None
        items = [
            o
            for o in reversed(self.prices.values())
            if (keys is None or o["lookup_key"] in keys)
            and active in (None, o["active"])
            and all(p.get(field) in (None, o[field]) for field in ("product", "type", "currency"))
        ]
        return self._page(items, p, "/v1/prices")

    # --- meters and meter events -----------------------------------------------------------------------------

    def _create_meter(self, p: Obj) -> Obj:
        for name in ("display_name", "event_name"):
            if not p.get(name):
                raise missing(name)
        formula = (p.get("default_aggregation") or {}).get("formula")
        if formula not in ("sum", "count", "last"):
            raise StripeError(400, "Invalid default_aggregation[formula].", param="default_aggregation[formula]")
        if any(m["event_name"] == p["event_name"] for m in self.meters.values()):
            message = f"A meter with event_name '{p['event_name']}' already exists."
            raise StripeError(400, message, code="resource_already_exists", param="event_name")
        mapping = p.get("customer_mapping") or {}
        if mapping.get("type", "by_id") != "by_id":
            raise StripeError(400, "customer_mapping[type] must be by_id.", param="customer_mapping[type]")
        value_key = (p.get("value_settings") or {}).get("event_payload_key", "value")
        meter = self._new("mtr", "billing.meter", display_name=p["display_name"], event_name=p["event_name"])
        meter.update(customer_mapping={"event_payload_key": mapping.get("event_payload_key", "stripe_customer_id")})
        meter["customer_mapping"]["type"] = "by_id"
        meter.update(default_aggregation={"formula": formula}, event_time_window=p.get("event_time_window"))
        meter.update(status="active", status_transitions={"deactivated_at": None}, updated=meter["created"])
        meter.update(value_settings={"event_payload_key": value_key})
        self.meters[meter["id"]] = meter
        return meter

    def _create_meter_event(self, p: Obj) -> Obj:
        name = p.get("event_name") or ""
        meter = next((m for m in self.meters.values() if m["event_name"] == name and m["status"] == "active"), None)
        if meter is None:
            raise StripeError(400, f"No active meter was found with event_name '{name}'.", param="event_name")
        payload = p.get("payload")
        if not isinstance(payload, dict):
            raise missing("payload")
        customer_key = meter["customer_mapping"]["event_payload_key"]
        customer = self._ref(self.customers, "customer", payload.get(customer_key), f"payload[{customer_key}]")["id"]
        value_key = meter["value_settings"]["event_payload_key"]
        raw = payload.get(value_key, "1" if meter["default_aggregation"]["formula"] == "count" else None)
        if raw is None:
            raise missing(f"payload[{value_key}]")
        if not isinstance(raw, str) or not raw.isdigit():
            message = f"payload[{value_key}] must be a whole number, got '{raw}'."
            raise StripeError(400, message, code="parameter_invalid_integer", param=f"payload[{value_key}]")
        now = self.clock()
        timestamp = as_int(p, "timestamp", int(now))
        if not now - 35 * DAY <= timestamp <= now + 300:
            message = "Timestamp must be within the past 35 calendar days or up to 5 minutes in the future."
            raise StripeError(400, message, param="timestamp")
        identifier = p.get("identifier") or new_id("mtrevt")
        if identifier in self._identifiers:  # checked last, so that a rejected event does not use up its identifier
            message = f"An event with identifier '{identifier}' already exists."
            raise StripeError(400, message, code="resource_already_exists", param="identifier")
        self._identifiers.add(identifier)
        stored = {
            "identifier": identifier,
            "event_name": name,
            "customer": customer,
            "value": int(raw),
            "timestamp": timestamp,
            "_received": now,  # when Stripe received it: an invoice finalized before counts it not
        }
        self._events.append(stored)
        self._by_meter.setdefault((name, customer), []).append(stored)
        return {
            "object": "billing.meter_event",
            "created": int(now),
            "event_name": name,
            "identifier": identifier,
            "livemode": False,
            "payload": payload,
            "timestamp": timestamp,
        }

    def _aggregate(self, meter: Obj, customer: str, start: int, end: int, received_by: float | None = None) -> int:
        """Apply the meter's formula to the customer's events with start <= timestamp < end (and, for an invoice
        already finalized, received by its finalization)."""
        hits = [
            e
            for e in self._by_meter.get((meter["event_name"], customer), ())
            if start <= e["timestamp"] < end and (received_by is None or e["_received"] <= received_by)
        ]
        formula = meter["default_aggregation"]["formula"]
        if formula == "count":
            return len(hits)
        if formula == "last":
            return max(hits, key=lambda e: e["timestamp"])["value"] if hits else 0
        return sum(e["value"] for e in hits)

    def _event_summaries(self, p: Obj, id: str) -> Obj:
        meter = self._get(self.meters, "billing.meter", id)
        customer = self._ref(self.customers, "customer", p.get("customer"), "customer")["id"]
        start, end = as_int(p, "start_time"), as_int(p, "end_time")
        window = p.get("value_grouping_window")
        step = {None: 60, "hour": 3600, "day": DAY}.get(window)
        if step is None:
            raise StripeError(400, "value_grouping_window must be hour or day.", param="value_grouping_window")
        for name, ts in (("start_time", start), ("end_time", end)):
            if ts % step:  # Stripe's documented alignment rules
                raise StripeError(400, f"{name} must be aligned with {window or 'minute'} boundaries.", param=name)
        if start >= end:
            raise StripeError(400, "start_time must be before end_time.", param="start_time")
        bounds = [(start, end)] if window is None else [(t, min(t + step, end)) for t in range(start, end, step)]
        summaries = [
            {
                # Stable ids, so that starting_after works across calls.
                "id": "mtrusg_" + hashlib.sha256(f"{id}|{customer}|{a}|{b}".encode()).hexdigest()[:24],
                "object": "billing.meter_event_summary",
                "aggregated_value": float(self._aggregate(meter, customer, a, b)),
                "start_time": a,
                "end_time": b,
                "meter": id,
                "livemode": False,
            }
            for a, b in bounds
        ]
        return self._page(summaries, p, f"/v1/billing/meters/{id}/event_summaries")

    # --- subscriptions ---------------------------------------------------------------------------------------

    def _sub(self, id: str) -> Obj:
        return self._get(self.subscriptions, "subscription", id)

    def _period(self, sub: Obj) -> tuple[int, int]:
        """The current period, rolled forward from the billing cycle anchor as clock() advances (before a future
        anchor: from the start date, backdated or not, to the anchor)."""
        (interval, count), anchor, n = sub["_interval"], sub["billing_cycle_anchor"], 0
        if self._now() < anchor or (sub["status"] == "canceled" and sub["ended_at"] < anchor):
            return sub["start_date"], anchor
        while sub["status"] != "canceled" and add_interval(anchor, interval, count * (n + 1)) <= self._now():
            n += 1
        return add_interval(anchor, interval, count * n), add_interval(anchor, interval, count * (n + 1))

    def _sub_items(self, sub: Obj) -> list[Obj]:
        return [item for item in self.items.values() if item["subscription"] == sub["id"]]

    def _render_item(self, item: Obj) -> Obj:
        start, end = self._period(self.subscriptions[item["subscription"]])
        return {**item, "price": self.prices[item["price"]], "current_period_start": start, "current_period_end": end}

    def _render_sub(self, sub: Obj) -> Obj:
        items = [self._render_item(item) for item in self._sub_items(sub)]
        url = f"/v1/subscription_items?subscription={sub['id']}"
        listed = {"object": "list", "data": items, "has_more": False, "total_count": len(items), "url": url}
        return {**{k: v for k, v in sub.items() if not k.startswith("_")}, "items": listed}

    def _new_item(self, sub: Obj, spec: Obj, prefix: str = "") -> Obj:
        def param(name: str) -> str:
            return f"{prefix}[{name}]" if prefix else name

        price = self._ref(self.prices, "price", spec.get("price"), param("price"))
        recurring = price["recurring"] or {}
        problem = (
            "The price must be recurring to be used on a subscription."
            if not recurring
            else f"The price {price['id']} is already on this subscription."
            if any(item["price"] == price["id"] for item in self._sub_items(sub))
            else f"A subscription can have at most {SUBSCRIPTION_ITEMS} items."
            if len(self._sub_items(sub)) >= SUBSCRIPTION_ITEMS
            else "All prices on a subscription must have the same billing interval."
            if (recurring["interval"], recurring["interval_count"]) != sub["_interval"]
            else "All prices on a subscription must have the same currency."
            if price["currency"] != sub["currency"]
            else None
        )
        if problem:
            raise StripeError(400, problem, param=param("price"))
        item = self._new("si", "subscription_item", metadata=metadata({}, spec.get("metadata")), subscription=sub["id"])
        item["price"] = price["id"]  # stored as an id, rendered as the full price
        if recurring["usage_type"] != "metered":
            item["quantity"] = as_int(spec, "quantity", 1)
        elif "quantity" in spec:
            message = "Quantity should not be specified where usage_type is `metered`."
            raise StripeError(400, message, param=param("quantity"))
        self.items[item["id"]] = item
        return item

    def _create_subscription(self, p: Obj) -> Obj:
        customer = self._ref(self.customers, "customer", p.get("customer"), "customer")["id"]
        specs = p.get("items")
        if not isinstance(specs, list) or not specs or not all(isinstance(spec, dict) for spec in specs):
            raise missing("items")
        first = self._ref(self.prices, "price", specs[0].get("price"), "items[0][price]")
        recurring = first["recurring"] or {"interval": "month", "interval_count": 1}
        now = self._now()
        if len(specs) > SUBSCRIPTION_ITEMS:
            raise StripeError(400, f"A subscription can have at most {SUBSCRIPTION_ITEMS} items.", param="items")
        start = as_int(p, "backdate_start_date", now)
        if start > now:
            raise StripeError(400, "backdate_start_date must be in the past.", param="backdate_start_date")
        anchor = as_int(p, "billing_cycle_anchor", start)
        if "billing_cycle_anchor" in p and not now <= anchor <= add_interval(start, recurring["interval"], 1):
            message = "billing_cycle_anchor must be in the future and before the next natural billing date."
            raise StripeError(400, message, param="billing_cycle_anchor")
        cancel_at = as_int(p, "cancel_at", 0) or None
        if cancel_at is not None and cancel_at <= now:
            raise StripeError(400, "cancel_at must be in the future.", param="cancel_at")
        sub = self._new("sub", "subscription", customer=customer, status="active", currency=first["currency"])
        sub.update(billing_cycle_anchor=anchor, start_date=start, cancel_at=cancel_at, cancel_at_period_end=False)
        sub.update(canceled_at=None, ended_at=None, latest_invoice=None, metadata=metadata({}, p.get("metadata")))
        sub.update(collection_method=p.get("collection_method", "charge_automatically"))
        sub["_interval"] = (recurring["interval"], recurring["interval_count"])
        self.subscriptions[sub["id"]] = sub
        try:
            for n, spec in enumerate(specs):
                self._new_item(sub, spec, f"items[{n}]")
        except StripeError:
            # All or nothing, like Stripe: a bad item leaves no half-built subscription behind.
            del self.subscriptions[sub["id"]]
            self.items = {k: v for k, v in self.items.items() if v["subscription"] != sub["id"]}
            raise
        if self._licensed(sub):
            # Licensed prices are billed in advance: the first period (from the start, backdated or not, to the
            # anchor or the cancellation), prorated, on an invoice of its own at once.
            first_end = min(anchor, cancel_at or anchor) if anchor > start else add_interval(start, *sub["_interval"])
            self._invoice(sub, start, start, now, advance=(start, min(first_end, cancel_at or first_end)))
        return self._render_sub(sub)

    def _licensed(self, sub: Obj) -> list[Obj]:
        return [i for i in self._sub_items(sub) if self.prices[i["price"]]["recurring"]["usage_type"] == "licensed"]

    def _natural_period(self, sub: Obj, ts: int) -> tuple[int, int]:
        """The whole billing period ``ts`` falls in, before a future anchor too (the interval ending at it): what
        a partial period's licensed charge is prorated against."""
        (interval, count), anchor = sub["_interval"], sub["billing_cycle_anchor"]
        if ts < anchor:
            n = -1
            while add_interval(anchor, interval, count * n) > ts:
                n -= 1
        else:
            n = 0
            while add_interval(anchor, interval, count * (n + 1)) <= ts:
                n += 1
        return add_interval(anchor, interval, count * n), add_interval(anchor, interval, count * (n + 1))

    def _licensed_lines(self, sub: Obj, start: int, end: int, *, credit: bool = False) -> list[Obj]:
        """Each licensed item's charge for ``[start, end)`` (inside one billing period), prorated by the seconds of
        the whole period it covers, rounded half up once; ``credit``: the unused part given back (negative)."""
        if end <= start:
            return []
        first, last = self._natural_period(sub, start)
        lines = []
        for item in self._licensed(sub):
            price = self.prices[item["price"]]
            share = Decimal(end - start) / Decimal(last - first)
            exact = Decimal(price["unit_amount_decimal"]) * item["quantity"] * share
            amount = int(exact.quantize(Decimal(1), ROUND_HALF_UP)) * (-1 if credit else 1)
            line = self._line_shape(sub, item, price, amount, item["quantity"], (start, end), proration=share != 1)
            line["description"] = (
                f"{'Unused time on' if credit else 'Time on' if share != 1 else ''} {item['quantity']} x "
                f"{price['product']}".strip()
            )
            lines.append(line)
        return lines

    def _update_subscription(self, p: Obj, id: str) -> Obj:
        sub = self._sub(id)
        if "cancel_at_period_end" in p:
            if sub["status"] == "canceled":
                message = "A canceled subscription can only update its metadata."
                raise StripeError(400, message, param="cancel_at_period_end")
            sub["cancel_at_period_end"] = as_bool(p, "cancel_at_period_end", False)
            sub["cancel_at"] = self._period(sub)[1] if sub["cancel_at_period_end"] else None
        sub["metadata"] = metadata(sub["metadata"], p.get("metadata"))
        return self._render_sub(sub)

    def _cancel_subscription(self, p: Obj, id: str) -> Obj:
        sub = self._sub(id)
        if sub["status"] == "canceled":
            raise StripeError(400, f"The subscription {id} has already been canceled.")
        # invoice_now: Stripe invoices the usage not yet invoiced at once (a final invoice up to now).
        self._invoices_due()
        start, end = self._period(sub)
        now = self._now()
        sub.update(status="canceled", canceled_at=now, ended_at=now, _cancel_params=p)
        # prorate: the licensed time paid for in advance and not used is credited (on the final invoice).
        paid_to = min(end, sub["cancel_at"] or end)
        credit = (now, paid_to) if as_bool(p, "prorate", False) and self._licensed(sub) and now < paid_to else None
        if as_bool(p, "invoice_now", False) and (now > start or credit):
            self._invoice(sub, start, now, now, credit=credit)
        return self._render_sub(sub)

    def _create_item(self, p: Obj) -> Obj:
        sub = self._ref(self.subscriptions, "subscription", p.get("subscription"), "subscription")
        if sub["status"] == "canceled":
            raise StripeError(400, "You cannot add items to a canceled subscription.", param="subscription")
        return self._render_item(self._new_item(sub, p))

    def _delete_item(self, p: Obj, id: str) -> Obj:
        item = self._get(self.items, "subscription_item", id)
        if len(self._sub_items(self.subscriptions[item["subscription"]])) == 1:
            message = "A subscription must have at least one active plan. To cancel a subscription, delete it."
            raise StripeError(400, message)
        del self.items[id]
        return {"id": id, "object": "subscription_item", "deleted": True}

    def _list_items(self, p: Obj) -> Obj:
        sub = self._ref(self.subscriptions, "subscription", p.get("subscription"), "subscription")
        return self._page([self._render_item(item) for item in self._sub_items(sub)], p, "/v1/subscription_items")

    # --- invoices --------------------------------------------------------------------------------------------

    def _preview_invoice(self, p: Obj) -> Obj:
        """The upcoming invoice: one line per metered item, priced on the usage of the item's current period."""
        if p.get("subscription"):
            subs = [self._ref(self.subscriptions, "subscription", p.get("subscription"), "subscription")]
            customer = subs[0]["customer"]
            if p.get("customer") not in (None, customer):
                raise StripeError(400, f"The subscription does not belong to {p['customer']}.", param="subscription")
        else:
            customer = self._ref(self.customers, "customer", p.get("customer"), "customer")["id"]
            subs = [s for s in self.subscriptions.values() if s["customer"] == customer]
        subs = [s for s in subs if s["status"] != "canceled"]
        if not subs:
            raise StripeError(400, f"No upcoming invoices for customer: {customer}", code="invoice_upcoming_none")
        lines = [
            self._line(sub, item, customer)
            for sub in subs
            for item in self._sub_items(sub)
            if self.prices[item["price"]]["recurring"]["usage_type"] == "metered"
        ]
        total = sum(line["amount"] for line in lines)
        first = subs[0]
        invoice = self._new("upcoming_in", "invoice", customer=customer, status="draft", currency=first["currency"])
        invoice.update(amount_due=total, amount_paid=0, amount_remaining=total, subtotal=total, total=total)
        invoice.update(
            subtotal_excluding_tax=total, total_excluding_tax=total, collection_method=first["collection_method"]
        )
        invoice.update(zip(("period_start", "period_end"), self._period(first), strict=True))
        url = "/v1/invoices/upcoming/lines"
        invoice["lines"] = {"object": "list", "data": lines, "has_more": False, "total_count": len(lines), "url": url}
        details = {"subscription": first["id"], "metadata": first["metadata"]}
        invoice["parent"] = {"type": "subscription_details", "subscription_details": details}
        return invoice

    def _invoices_due(self) -> dict[str, Obj]:
        """Finalize every invoice whose period ended more than the grace ago (lazily: each counts only the events
        received by its finalization, so it does not matter when a request comes to see it)."""
        now = self._now()
        for sub in self.subscriptions.values():
            if sub["status"] == "canceled":
                continue
            start = int(sub.get("_invoiced_until") or sub["start_date"])
            while True:
                end = sub["billing_cycle_anchor"] if start < sub["billing_cycle_anchor"] else 0
                if not end:  # whole periods from the anchor
                    (interval, count), n = sub["_interval"], 0
                    while add_interval(sub["billing_cycle_anchor"], interval, count * n) <= start:
                        n += 1
                    end = add_interval(sub["billing_cycle_anchor"], interval, count * n)
                cancel_at = sub["cancel_at"] or end + 1
                end = min(end, cancel_at)
                if end + self.invoice_grace > now:
                    break
                # At a renewal, the next period's licensed charge in advance (to the cancellation, prorated).
                following = self._natural_period(sub, end)[1] if end < cancel_at else end
                self._invoice(sub, start, end, end + self.invoice_grace, advance=(end, min(following, cancel_at)))
                start = sub["_invoiced_until"] = end
                if end >= cancel_at:
                    sub.update(status="canceled", canceled_at=cancel_at, ended_at=cancel_at)
                    break
        return self.invoices

    def _invoice(
        self,
        sub: Obj,
        start: int,
        end: int,
        finalized_at: int,
        *,
        advance: tuple[int, int] | None = None,
        credit: tuple[int, int] | None = None,
    ) -> Obj:
        """The invoice of ``[start, end)``: its metered usage, then ``advance``'s licensed charge (the period it
        opens, billed ahead) and ``credit``'s (licensed time paid for and given back at a cancellation)."""
        customer = sub["customer"]
        lines = [
            self._line(sub, item, customer, (start, end), finalized_at)
            for item in self._sub_items(sub)
            if self.prices[item["price"]]["recurring"]["usage_type"] == "metered"
        ]
        lines += self._licensed_lines(sub, *advance) if advance else []
        lines += self._licensed_lines(sub, *credit, credit=True) if credit else []
        total = sum(line["amount"] for line in lines)
        invoice = self._new("in", "invoice", customer=customer, status="open", currency=sub["currency"])
        invoice.update(created=finalized_at, period_start=start, period_end=end, subtotal=total, total=total)
        invoice.update(amount_due=total, amount_paid=0, amount_remaining=total)
        invoice["collection_method"] = "charge_automatically"
        invoice["status_transitions"] = {"finalized_at": finalized_at, "paid_at": None, "voided_at": None}
        url = f"/v1/invoices/{invoice['id']}/lines"
        invoice["lines"] = {"object": "list", "data": lines, "has_more": False, "total_count": len(lines), "url": url}
        details = {"subscription": sub["id"], "metadata": sub["metadata"]}
        invoice["parent"] = {"type": "subscription_details", "subscription_details": details}
        sub["latest_invoice"] = invoice["id"]
        self.invoices[invoice["id"]] = invoice
        return invoice

    def _list_invoices(self, p: Obj) -> Obj:
        def wanted(invoice: Obj) -> bool:
            sub = invoice["parent"]["subscription_details"]["subscription"]
            fields = {"customer": invoice["customer"], "subscription": sub, "status": invoice["status"]}
            return all(p.get(name) in (None, value) for name, value in fields.items())

        return self._page([i for i in reversed(self._invoices_due().values()) if wanted(i)], p, "/v1/invoices")

    def _line(
        self, sub: Obj, item: Obj, customer: str, period: tuple[int, int] | None = None, received_by: int | None = None
    ) -> Obj:
        """A line shaped like API versions since basil: the price sits under ``pricing.price_details``."""
        price = self.prices[item["price"]]
        start, end = period or self._period(sub)
        quantity = self._aggregate(self.meters[price["recurring"]["meter"]], customer, start, end, received_by)
        # Stripe rounds the line amount half up to the currency's minor unit: 5 x 0.5 = 2.5 -> 3.
        amount = int((quantity * Decimal(price["unit_amount_decimal"])).quantize(Decimal(1), ROUND_HALF_UP))
        return self._line_shape(sub, item, price, amount, quantity, (start, end))

    @staticmethod
    def _line_shape(
        sub: Obj, item: Obj, price: Obj, amount: int, quantity: int, period: tuple[int, int], proration: bool = False
    ) -> Obj:
        start, end = period
        parent = {"subscription": sub["id"], "subscription_item": item["id"], "proration": proration}
        return {
            "id": new_id("il_tmp"),
            "object": "line_item",
            "amount": amount,
            "subtotal": amount,
            "currency": price["currency"],
            "description": f"{quantity} x {price['product']} (at {price['unit_amount_decimal']} / unit)",
            "invoice": None,
            "livemode": False,
            "metadata": {},
            "parent": {"type": "subscription_item_details", "subscription_item_details": parent},
            "period": {"start": start, "end": end},
            "pricing": {
                "type": "price_details",
                "price_details": {"price": price["id"], "product": price["product"]},
                "unit_amount_decimal": price["unit_amount_decimal"],
            },
            "quantity": quantity,
            "quantity_decimal": str(quantity),
            "subscription": sub["id"],
        }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # benchmarks open many connections at once; the default backlog of 5 refuses some
    app: StripeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK's requests session reuses connections
    disable_nagle_algorithm = True  # headers and body are two writes; Nagle + delayed ACK would add 40 ms each

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        headers = {k.lower(): v for k, v in self.headers.items()}
        app = cast(_HTTPServer, self.server).app
        if app.fault == "timeout" and self._held(app):
            return
        status, data, extra = app.handle(self.command, self.path, body, headers)
        self.send_response(status)
        extra = {"Request-Id": new_id("req"), "Stripe-Version": headers.get("stripe-version", API_VERSION), **extra}
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)), **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _serve

    def _held(self, app: StripeServer) -> bool:
        """Under a "timeout" window: hold the request until the window ends or ``hang`` passes, then drop the
        connection unanswered (the client's read timeout, or a reset: it cannot know whether Stripe acted)."""
        deadline = time.monotonic() + app.hang
        while app.fault == "timeout" and time.monotonic() < deadline:
            time.sleep(0.05)
        with app._lock:
            app.faulted += 1
        self.close_connection = True
        return True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request would drown the test output


# --- webhooks ------------------------------------------------------------------------------------------------


def event(type: str, obj: Obj, *, id: str | None = None, created: int | None = None) -> Obj:
    """A Stripe ``event`` object wrapping ``obj``, as delivered to webhook endpoints."""
    return {
        "id": id or new_id("evt"),
        "object": "event",
        "type": type,
        "data": {"object": obj},
        "created": int(time.time()) if created is None else created,
        "livemode": False,
        "api_version": API_VERSION,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
    }


def signed_webhook(payload: Obj, secret: str, timestamp: int | None = None) -> tuple[bytes, str]:
    """The body and ``Stripe-Signature`` header Stripe would send, signed by the SDK itself so the two cannot drift."""
    body = json.dumps(payload)
    header: str = stripe.WebhookSignature.generate_signature_header(body, secret, timestamp)
    return body.encode(), header


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="In-memory Stripe API v1 server for tests and benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=12111)
    parser.add_argument("--api-key", default="sk_test_ladder")
    parser.add_argument("--rate", type=float, default=None, help="meter events per second (token bucket)")
    parser.add_argument("--burst", type=int, default=None, help="token bucket capacity (default: max(1, rate))")
    args = parser.parse_args(argv)
    server = StripeServer(
        api_key=args.api_key, rate_per_second=args.rate, burst=args.burst, host=args.host, port=args.port
    )
    print(f"Stripe test server on {server.url} (api key {args.api_key})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
