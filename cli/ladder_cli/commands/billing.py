"""What work costs: ``ladder usage``, ``ladder invoices`` (and ``invoices show``), ``ladder budget show|set``."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.budget import budget_retrieve, budget_update
from ladder_sdk.api.invoices import invoices_list, invoices_upcoming_retrieve
from ladder_sdk.api.usage import usage_retrieve
from ladder_sdk.models import BudgetRequest, Invoice, UsageGranularityEnum
from ladder_sdk.types import UNSET

from ladder_cli import output
from ladder_cli.commands.groups import group
from ladder_cli.errors import NOT_FOUND, USAGE, CliError
from ladder_cli.session import answer, client, every

# Stripe's amounts are in the currency's minor unit; these currencies have none (https://docs.stripe.com/currencies).
ZERO_DECIMAL = frozenset(
    ["bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"]
)
BUDGET_PLACES, BUDGET_DIGITS = 2, 12  # the API's budget: 14 digits, 2 of them decimals
BY = typer.Option(UsageGranularityEnum.DAY, "--by", help="One row per SKU and day, or per SKU and hour.")


def _money(amount: Decimal | str, currency: str) -> str:
    return f"{Decimal(amount):f} {currency.upper()}"


# --- usage ------------------------------------------------------------------------------------------------------


def month_window(month: str | None, now: datetime) -> tuple[str, datetime, datetime | None]:
    """The month's label, its start and its end in UTC; the end is None for this month (so far: Ladder's default)."""
    if month is None:
        start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    else:
        found = re.fullmatch(r"(\d{4})-(\d{2})", month.strip())
        if not found or not 1 <= int(found[2]) <= 12:
            raise CliError(f"--month takes YYYY-MM, like 2026-03: got {month!r}", USAGE)
        start = datetime(int(found[1]), int(found[2]), 1, tzinfo=UTC)
    end = (start + timedelta(days=32)).replace(day=1)
    return f"{start:%Y-%m}", start, None if start <= now < end else end


def totals(rows: list[Any]) -> dict[str, Decimal]:
    """The sum of the rows' costs, per currency."""
    summed: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        summed[row.currency] += Decimal(row.amount)
    return dict(summed)


def usage(
    month: str = typer.Option(
        None, "--month", metavar="YYYY-MM", help="The month, YYYY-MM in UTC (default: this month so far)."
    ),
    by: UsageGranularityEnum = BY,
    as_json: bool = output.JSON,
) -> None:
    """Show what was used in a month and what it cost: one row per SKU and day (or hour), and the total.

    Each row gives the SKU (rung, GPU model and unit, or storage kind, and region), the quantity in its unit
    (GPU-hours, MIG slice-hours, node-hours or GB-hours) and its cost. This month includes the hour under way.

    Example: ladder usage --month 2026-03 --by day
    """
    label, start, end = month_window(month, datetime.now(UTC))
    api = client()
    window = {"from_": start, "granularity": by, **({"to": end} if end else {})}
    rows = sorted(answer(usage_retrieve.sync_detailed, api, **window).rows, key=lambda r: (r.window_start, r.sku))
    summed = totals(rows)
    if as_json:
        output.emit_json(
            {
                "month": label,
                "from": start.isoformat(),
                "to": end.isoformat() if end else None,
                "granularity": str(by),
                "rows": output.plain(rows),
                "total": {currency: str(amount) for currency, amount in summed.items()},
            }
        )
        return
    when = "%Y-%m-%d" if by == UsageGranularityEnum.DAY else "%Y-%m-%d %H:00"
    lines = [(f"{r.window_start:{when}}", r.sku, r.quantity, r.unit, _money(r.amount, r.currency)) for r in rows]
    if not lines:
        output.err.print(f"No usage in {label}.", highlight=False)
        return
    lines += [("Total", "", "", "", _money(amount, currency)) for currency, amount in sorted(summed.items())]
    output.table(("DAY" if by == UsageGranularityEnum.DAY else "HOUR", "SKU", "QUANTITY", "UNIT", "COST"), lines)


# --- invoices ---------------------------------------------------------------------------------------------------


def _stripe_total(invoice: Invoice, minor: int) -> Decimal:
    places = 0 if invoice.currency.lower() in ZERO_DECIMAL else 2
    return Decimal(minor).scaleb(-places)


def _period(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    return f"{start:%Y-%m-%d} to {end - timedelta(microseconds=1):%Y-%m-%d}"


def _number(invoice: Any, upcoming: bool = False) -> str:
    if isinstance(invoice, Invoice):
        return invoice.stripe_id or str(invoice.id)
    return "upcoming" if upcoming else f"{invoice.period_start:%Y-%m}"


def _numbers(invoice: Any, upcoming: bool) -> set[str]:
    """What names the invoice in ``ladder invoices show``: Stripe's id or Ladder's; a preview's month."""
    if isinstance(invoice, Invoice):
        return {invoice.stripe_id, str(invoice.id)}
    return {f"{invoice.period_start:%Y-%m}", *(["upcoming"] if upcoming else [])}


def _summary(invoice: Any, upcoming: bool = False) -> tuple[str, str, str, str, str]:
    """NUMBER, PERIOD, STATE, TOTAL, CURRENCY."""
    period = _period(invoice.period_start, invoice.period_end)
    if isinstance(invoice, Invoice):
        total = f"{_stripe_total(invoice, invoice.total):f}"
        return (_number(invoice), period, invoice.status, total, invoice.currency.upper())
    state = "so far" if upcoming else str(invoice.status)
    return (_number(invoice, upcoming), period, state, f"{Decimal(invoice.total):f}", invoice.currency.upper())


def _invoices(api: AuthenticatedClient) -> tuple[list[Any], Any]:
    """Ladder's invoices, newest first, and the upcoming one (this month so far). Without Stripe, the list's
    preview of this month is the upcoming one: it is shown once."""
    upcoming = answer(invoices_upcoming_retrieve.sync_detailed, api)
    listed = [
        item
        for item in every(invoices_list.sync_detailed, api)
        if isinstance(item, Invoice) or item.period_start != upcoming.period_start
    ]
    listed.sort(key=lambda item: item.period_start or datetime.min.replace(tzinfo=UTC), reverse=True)
    return listed, upcoming


def invoices_list_command(as_json: bool) -> None:
    api = client()
    listed, upcoming = _invoices(api)
    if as_json:
        output.emit_json({"upcoming": upcoming.to_dict(), "invoices": output.plain(listed)})
        return
    rows = [_summary(upcoming, upcoming=True), *(_summary(item) for item in listed)]
    output.table(("NUMBER", "PERIOD", "STATE", "TOTAL", "CURRENCY"), rows)


invoices_app = group(
    "List your invoices and this month's upcoming one: number, period, state, total, currency.\n\n"
    "Without Stripe, Ladder's invoices are previews priced from the price book, one per month with usage; with "
    "Stripe, the invoices Stripe issued. `ladder invoices show NUMBER` shows one invoice's lines.\n\n"
    "Example: ladder invoices --json",
    invoices_list_command,
)


@invoices_app.command("list")
def invoices_list_cli(as_json: bool = output.JSON) -> None:
    """List your invoices and the upcoming one (this month so far).

    Example: ladder invoices list
    """
    invoices_list_command(as_json)


@invoices_app.command("show")
def invoices_show(
    number: str = typer.Argument(
        ..., metavar="NUMBER", help="The NUMBER `ladder invoices` shows: upcoming, YYYY-MM, or Stripe's id."
    ),
    as_json: bool = output.JSON,
) -> None:
    """Show one invoice and its lines: what was used, at which price, for how much.

    NUMBER is `upcoming` (this month so far), a month (YYYY-MM) for a preview, or a Stripe invoice's id.

    Example: ladder invoices show upcoming
    """
    listed, upcoming = _invoices(client())
    everything = [(upcoming, True), *((item, False) for item in listed)]
    found = [item for item, is_upcoming in everything if number in _numbers(item, is_upcoming)]
    if not found:
        raise CliError(f"no invoice {number!r} (ladder invoices lists them)", NOT_FOUND, "not_found")
    invoice = found[0]
    if as_json:
        output.emit_json(invoice)
        return
    shown, period, state, total, currency = _summary(invoice, invoice is upcoming)
    pairs = [("Number", shown), ("Period", period), ("State", state), ("Total", f"{total} {currency}")]
    if isinstance(invoice, Invoice) and invoice.hosted_invoice_url:
        pairs.append(("Online", invoice.hosted_invoice_url))
    output.fields(pairs)
    output.out.print()
    if isinstance(invoice, Invoice):
        output.table(
            ("DESCRIPTION", "QUANTITY", "AMOUNT"),
            (
                (
                    line.get("description", ""),
                    line.get("quantity"),
                    _money(_stripe_total(invoice, int(line.get("amount") or 0)), line.get("currency") or currency),
                )
                for line in invoice.lines or []
            ),
            empty="No lines.",
        )
        return
    output.table(
        ("SKU", "QUANTITY", "UNIT", "UNIT PRICE", "AMOUNT"),
        (
            (line.sku, line.quantity, line.unit, _money(line.unit_price, currency), _money(line.amount, currency))
            for line in invoice.lines
        ),
        empty="No lines.",
    )


# --- budget -----------------------------------------------------------------------------------------------------


def budget_amount(text: str) -> Decimal | None:
    """AMOUNT as the API takes it: more than zero, at most two decimals, plain digits; ``none`` removes the
    budget."""
    text = text.strip()
    if text.lower() == "none":
        return None
    plain = re.fullmatch(rf"\d{{1,{BUDGET_DIGITS}}}(\.\d{{1,{BUDGET_PLACES}}})?", text)
    amount = Decimal(text) if plain else Decimal(0)
    if amount <= 0:
        raise CliError(
            f"AMOUNT is a monthly budget above zero with at most {BUDGET_PLACES} decimals (like 2500 or 99.50), or "
            f"`none` to remove it: got {text!r}",
            USAGE,
        )
    return amount.quantize(Decimal(1).scaleb(-BUDGET_PLACES))


def used_percent(status: Any) -> Decimal | None:
    if status.monthly is None:
        return None
    return (Decimal(status.spend) * 100 / Decimal(status.monthly)).quantize(Decimal("0.1"))


def _budget_json(status: Any) -> dict[str, Any]:
    used = used_percent(status)
    return {**status.to_dict(), "used_percent": None if used is None else str(used)}


def _budget_fields(status: Any) -> None:
    used = used_percent(status)
    output.fields(
        [
            ("Monthly budget", _money(status.monthly, status.currency) if status.monthly is not None else "none"),
            ("Hard stop", "on: at 100%, new work is refused and running work stops" if status.hard_stop else "off"),
            ("Spent this month", _money(status.spend, status.currency)),
            ("Used", f"{used}%" if used is not None else "-"),
            ("Alerts crossed", ", ".join(f"{level}%" for level in status.alerts) or "none"),
        ]
    )


def budget_show_command(as_json: bool) -> None:
    status = answer(budget_retrieve.sync_detailed, client())
    if as_json:
        output.emit_json(_budget_json(status))
        return
    _budget_fields(status)


budget_app = group(
    "Show or set the monthly budget: what was spent this month against it and the alerts crossed.\n\n"
    "Alerts go out at 50%, 80% and 100%; with a hard stop, at 100% new work is refused and running work stops "
    "(jobs at their next checkpoint). `ladder budget` alone shows it.\n\n"
    "Example: ladder budget set 2500 --hard-stop",
    budget_show_command,
)


@budget_app.command("show")
def budget_show(as_json: bool = output.JSON) -> None:
    """Show the monthly budget, its hard stop, what was spent this month, the share used and the alerts crossed.

    The spend includes the hour under way.

    Example: ladder budget show --json
    """
    budget_show_command(as_json)


@budget_app.command("set")
def budget_set(
    amount: str = typer.Argument(
        ..., metavar="AMOUNT", help="The monthly budget in the account's currency, or `none` to remove it."
    ),
    hard_stop: bool | None = typer.Option(
        None, "--hard-stop/--no-hard-stop", help="Stop work at 100% (default: keep today's setting)."
    ),
    as_json: bool = output.JSON,
) -> None:
    """Set the monthly budget (or remove it with `none`), with or without a hard stop.

    The budget applies at once: one already used up sends its alerts, and with a hard stop refuses new work and
    stops running work (jobs at their next checkpoint). Owners and admins may set it.

    Example: ladder budget set 2500 --no-hard-stop
    """
    monthly = budget_amount(amount)
    api = client()
    if hard_stop is None:
        hard_stop = bool(answer(budget_retrieve.sync_detailed, api).hard_stop)
    body = BudgetRequest(monthly=None if monthly is None else str(monthly), hard_stop=hard_stop)
    status = answer(budget_update.sync_detailed, api, body=body)
    if as_json:
        output.emit_json(_budget_json(status))
        return
    if status.monthly is None:
        output.err.print("Budget removed: no monthly limit.", highlight=False)
    else:
        stop = "on" if status.hard_stop not in (False, UNSET) else "off"
        output.err.print(
            f"Budget set: {_money(status.monthly, status.currency)} a month, hard stop {stop}.", highlight=False
        )
    _budget_fields(status)


def register(app: typer.Typer) -> None:
    app.command()(usage)
    app.add_typer(invoices_app, name="invoices")
    app.add_typer(budget_app, name="budget")
