"""What can be bought: ``ladder offerings``."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import typer
from ladder_sdk.api.offerings import offerings_list

from ladder_cli import output
from ladder_cli.session import answer, public_client


def offerings(
    rung: str = typer.Option(
        None, "--rung", help="Only this rung: bare_metal, vm, confidential_vm, container, job, serverless."
    ),
    region: str = typer.Option(None, "--region", help="Only this region."),
    as_json: bool = output.JSON,
) -> None:
    """List what can be bought now: rung, GPU model, region, free now, price per hour and both isolation promises.

    Example: ladder offerings --rung container --region eu-west
    """
    rows = [
        row
        for row in answer(offerings_list.sync_detailed, public_client())
        if (rung is None or row.rung == rung) and (region is None or row.region == region)
    ]
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        (
            "RUNG",
            "GPU MODEL",
            "REGION",
            "FREE",
            "PRICE/HOUR",
            "MIG FROM",
            "PERFORMANCE ISOLATION",
            "SECURITY ISOLATION",
        ),
        (
            (
                row.rung,
                row.gpu_model,
                row.region,
                f"{row.available} {_noun(row)}",
                _price(row, row.unit.split("-")[0]),
                _mig_from(row),
                ", ".join(row.performance_isolation),
                row.security_isolation,
            )
            for row in rows
        ),
        empty="Nothing is offered that matches.",
    )


def _noun(row: Any) -> str:
    return "nodes" if row.unit.startswith("node") else "GPUs"


def _prices(row: Any) -> dict[str, str]:
    return {unit: str(price) for unit, price in row.prices.to_dict().items()}


def _money(row: Any, price: str) -> str:
    currency = f" {row.currency.upper()}" if isinstance(row.currency, str) else ""
    return f"{Decimal(price).normalize():f}{currency}"


def _price(row: Any, unit: str) -> str:
    """The price of one GPU (or node) for an hour."""
    price = _prices(row).get(unit)
    return f"{_money(row, price)}/{'node' if unit == 'node' else 'GPU'}" if price else "not priced yet"


def _mig_from(row: Any) -> str:
    """The cheapest MIG slice on offer, and which (the whole list is in --json)."""
    slices = {unit.split(":", 1)[1]: price for unit, price in _prices(row).items() if unit.startswith("mig:")}
    if not slices:
        return "-"
    profile = min(slices, key=lambda name: Decimal(slices[name]))
    return f"{_money(row, slices[profile])} ({profile})"


def register(app: typer.Typer) -> None:
    app.command()(offerings)
