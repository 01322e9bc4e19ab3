"""Revenue and margin: the pure arithmetic (billing.domain.margin), then the report the ledger, capacity samples
and cost
book make (billing.selectors.margin_report)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from billing.domain.margin import Basis, CostBook, Held, Revenue, Sample, margin
from billing.domain.metering import to_ms
from billing.models import Unit
from billing.selectors import margin_report
from billing.services.accounts import cost_basis_add
from billing.services.ledger import windows_close
from provisioning.models import CapacitySample, GpuModel, Hall
from tests.support import SYSTEM
from tests.support.billing import BASE, H100, at, load_fleet, place, price, run, stop

HOUR = 3_600_000
D = Decimal


def book(*entries: tuple[str, str, int, str, str]) -> CostBook:
    return CostBook(
        (model, hall, Basis(start, D(per_hour), currency)) for model, hall, start, per_hour, currency in entries
    )


# --- the pure rules ---------------------------------------------------------------------------------------------


def test_the_worked_example():
    """docs/finance.md's example: one hall of 16 H100s at 1.50/GPU-hour for an hour; a container tenant bills
    4 GPU-hours at 2.49 and a MIG tenant a 3g slice (3/7 of a GPU) for the hour at 1.17."""
    costs = book(("H100", "hall-a", 0, "1.50", "usd"))
    revenue = [
        Revenue("2026-11", "container", "H100", "eu", "usd", D("9.96")),
        Revenue("2026-11", "container", "H100", "eu", "usd", D("1.17")),
    ]
    held = [
        Held("2026-11", "container", "H100", "hall-a", "eu", "usd", 0, D(4)),
        Held("2026-11", "container", "H100", "hall-a", "eu", "usd", 0, D(3) / 7),
    ]
    # 16 GPUs; 11 whole GPUs free and 4/7 of the MIG GPU free, of which 1/7 no profile can use any more.
    samples = [Sample("2026-11", "H100", "hall-a", "eu", HOUR, 3600, 16, 11_428, 142)]
    report = margin(revenue=revenue, held=held, samples=samples, book=costs)
    [row] = report.rungs
    assert row.revenue == D("11.13")
    assert row.allocated_gpu_hours.quantize(D("0.0001")) == D("4.4286")
    assert row.allocated_cost.quantize(D("0.0001")) == D("6.6429")  # 4 3/7 GPU-hours x 1.50
    assert row.gross_margin.quantize(D("0.01")) == D("4.49")
    [cap] = report.capacity
    assert cap.fleet_cost == D("24.00")  # 16 GPU-hours x 1.50
    assert cap.idle_cost.quantize(D("0.0001")) == D("17.1420")
    assert cap.stranded_cost.quantize(D("0.0001")) == D("0.2130")
    assert cap.unbilled_cost.quantize(D("0.01")) == D("0.00")
    totals = report.totals()[("2026-11", "usd")]
    assert totals["gross_margin"] == D("11.13") - D("24.00")  # the fleet's margin: idle capacity costs money


def test_the_cost_basis_in_force_when_the_work_ran_prices_it():
    costs = book(("H100", "a", 0, "1.00", "usd"), ("H100", "a", 2 * HOUR, "2.00", "usd"))
    held = [
        Held("2026-11", "vm", "H100", "a", "eu", "usd", HOUR, D(1)),
        Held("2026-11", "vm", "H100", "a", "eu", "usd", 2 * HOUR, D(1)),
    ]
    [row] = margin(revenue=[], held=held, samples=[], book=costs).rungs
    assert row.allocated_cost == D(3)


def test_hours_without_a_cost_basis_are_named_not_guessed():
    costs = book(("H100", "a", 5 * HOUR, "1.00", "usd"), ("H200", "b", 0, "1.00", "eur"))
    held = [
        Held("2026-11", "vm", "H100", "a", "eu", "usd", 0, D(2)),  # before the first entry
        Held("2026-11", "vm", "H200", "b", "eu", "usd", 0, D(3)),  # a cost basis in another currency
    ]
    samples = [Sample("2026-11", "H100", "a", "eu", HOUR, 3600, 8, 8000, 0)]
    report = margin(revenue=[], held=held, samples=samples, book=costs)
    assert [(r.model, r.uncosted_gpu_hours, r.allocated_cost) for r in report.rungs] == [
        ("H100", D(2), D(0)),
        ("H200", D(3), D(0)),
    ]
    assert report.uncosted == {("2026-11", "H100", "a"): D(8)}
    assert report.capacity == []


money = st.decimals(min_value=0, max_value=1000, places=4)


@given(
    revenue=st.lists(st.tuples(st.sampled_from(["vm", "container", "job"]), money), max_size=8),
    held=st.lists(st.tuples(st.sampled_from(["vm", "container", "job"]), st.integers(0, 30), money), max_size=8),
    samples=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 600), st.integers(0, 64)), max_size=8),
)
def test_every_figure_adds_up(revenue, held, samples):
    costs = book(("H100", "a", 0, "1.25", "usd"), ("H100", "a", 10 * HOUR, "1.75", "usd"))
    report = margin(
        revenue=[Revenue("2026-11", rung, "H100", "eu", "usd", amount) for rung, amount in revenue],
        held=[Held("2026-11", rung, "H100", "a", "eu", "usd", h * HOUR, hours) for rung, h, hours in held],
        samples=[
            Sample("2026-11", "H100", "a", "eu", h * HOUR, seconds, gpus, gpus * 500, gpus * 100)
            for h, seconds, gpus in samples
        ],
        book=costs,
    )
    assert sum((r.revenue for r in report.rungs), D(0)) == sum((a for _, a in revenue), D(0))
    assert sum((r.allocated_gpu_hours for r in report.rungs), D(0)) == sum((x for _, _, x in held), D(0))
    for row in report.rungs:
        assert row.gross_margin == row.revenue - row.allocated_cost
    for cap in report.capacity:
        parts = cap.allocated_cost + cap.idle_cost + cap.stranded_cost + cap.unbilled_cost
        assert abs(cap.fleet_cost - parts) < D("1e-20")  # Decimal's 28 digits, far below a cent
        assert 0 <= cap.idle_cost + cap.stranded_cost <= cap.fleet_cost  # idle and stranded are part of the fleet
    for total in report.totals().values():
        assert total["gross_margin"] == total["revenue"] - total["fleet_cost"]


# --- from the ledger ----------------------------------------------------------------------------------------------


def test_the_report_prices_the_ledger_and_the_samples(acme, globex):
    load_fleet()
    hall = Hall.objects.get(code="eu-west-1a")
    model = GpuModel.objects.get(name=H100)
    parts = {"capex": D("1.00"), "power": D("0.20"), "space": D("0.10"), "network": D("0.05")}
    cost_basis_add(gpu_model=model, hall=hall, effective_from=BASE, parts=parts, currency="usd", actor=SYSTEM)
    price("2.40")
    price("0.90", unit=Unit.MIG, mig_profile="3g.40gb")
    stop(run(place(acme, gpus=2), at(0)), at(30))  # one GPU-hour billed at 2.40
    stop(run(place(globex, mig_profile="3g.40gb"), at(0)), at(60))  # a 3g slice for an hour: 3/7 GPU-hour
    windows_close(now=at(120))
    gpus = sum(n.gpu_count for n in hall.nodes.filter(gpu_model=model))
    CapacitySample.objects.create(
        at=at(60), seconds=3600, hall=hall, gpu_model=model, gpus=gpus, idle_milli=1000 * (gpus - 3), stranded_milli=0
    )

    report = margin_report(start=BASE, end=BASE + timedelta(days=1), now=at(120))

    [row] = report.rungs
    assert (row.month, row.rung, row.model, row.region) == ("2026-11", "container", H100, "eu-west")
    assert row.revenue == D("2.40") * 1 + D("0.90")
    assert row.allocated_gpu_hours == 1 + D(3) / 7
    assert row.allocated_cost == (1 + D(3) / 7) * D("1.35")
    [cap] = report.capacity
    assert cap.gpu_hours == gpus
    assert cap.fleet_cost == gpus * D("1.35")
    assert cap.idle_cost == (gpus - 3) * D("1.35")
    assert to_ms(BASE) % HOUR == 0


def test_running_work_counts_up_to_now(acme):
    load_fleet()
    hall, model = Hall.objects.get(code="eu-west-1a"), GpuModel.objects.get(name=H100)
    parts = {"capex": D("1.00"), "power": D("0.20"), "space": D("0.10"), "network": D("0.05")}
    cost_basis_add(gpu_model=model, hall=hall, effective_from=BASE, parts=parts, currency="usd", actor=SYSTEM)
    price("2.40")
    run(place(acme, gpus=1), at(0))  # still running: 90 minutes by at(90), over two hourly windows
    [row] = margin_report(start=BASE, end=BASE + timedelta(days=1), now=at(90)).rungs
    assert row.revenue == D("3.60")
    assert row.allocated_gpu_hours == D("1.5")
    assert row.allocated_cost == D("1.5") * D("1.35")
