"""The usage ledger: intervals follow the running state, hours and price changes split them, windows close
into immutable rollups, late usage becomes an adjustment, provider faults are not billed."""

from datetime import timedelta
from decimal import Decimal
from unittest import mock

from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.domain.metering import to_ms
from billing.models import MeteringLock, MeterTotal, Unit, UsageInterval, UsageRollup
from billing.selectors import invoice_for, usage_rows
from billing.services.ledger import windows_close
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import Allocation, AllocationFault, Node
from provisioning.services.faults import node_failed
from provisioning.services.transitions import allocation_transition
from tests.support import SYSTEM
from tests.support.billing import BASE, at, load_fleet, place, price, run, stop

GRACE = timedelta(minutes=10)


def rollups(tenant):
    return list(UsageRollup.objects.filter(tenant=tenant).order_by("window_ms", "seq"))


def test_an_allocation_that_ran_n_seconds_shows_n_gpu_seconds(acme):
    load_fleet()
    price("2.40")
    allocation = stop(run(place(acme, gpus=1), at(5)), at(5, seconds=437.25))
    [row] = usage_rows(tenant=acme, start=BASE, end=at(60), granularity="hour", now=at(30))
    assert row.sku == "container/H100-SXM-80GB/gpu/eu-west"
    assert row.gpu_seconds == Decimal("437.250")
    assert row.amount == Decimal("0.29")  # 437.25 s at 2.40/h = 0.2915
    assert allocation.state == S.STOPPED


def test_whole_gpus_and_mig_slices_count_their_own_sku(acme):
    load_fleet()
    price("2.00")
    price("0.50", unit=Unit.MIG, mig_profile="3g.40gb")
    stop(run(place(acme, gpus=4), at(0)), at(0, seconds=10))
    stop(run(place(acme, mig_profile="3g.40gb"), at(0)), at(0, seconds=10))
    rows = {
        r.sku: r.gpu_seconds for r in usage_rows(tenant=acme, start=BASE, end=at(60), granularity="hour", now=at(1))
    }
    assert rows == {
        "container/H100-SXM-80GB/gpu/eu-west": Decimal("40.000"),  # 40,000 milli-GPU-seconds
        "container/H100-SXM-80GB/mig-3g.40gb/eu-west": Decimal("10.000"),  # seconds of the slice, not of a GPU
    }
    assert UsageInterval.objects.get(units_milli=4000).quantity_milli == 40_000


def test_time_not_running_is_not_billed(acme):
    load_fleet()
    allocation = place(acme, gpus=1)
    allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM, at=at(0))
    assert not UsageInterval.objects.exists()  # placed and provisioning: not billed
    allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=at(10))
    allocation_transition(allocation=allocation, to=S.STOPPING, actor=SYSTEM, at=at(11))
    allocation_transition(allocation=allocation, to=S.STOPPED, actor=SYSTEM, at=at(30))
    assert sum(i.quantity_milli or 0 for i in UsageInterval.objects.all()) == 60_000  # the running minute only


@override_settings(LADDER_SIM_CHECKPOINT_SECONDS=60)
def test_a_provider_fault_is_not_billed(acme):
    """A job is billed on goodput: not the restart, and not the work lost since its last checkpoint."""
    load_fleet()
    job = run(place(acme, rung="job", gpus=2), at(0))
    node = Node.objects.filter(gpus__allocation_devices__allocation=job).distinct().get()
    # The node dies after 100 s (last checkpoint at 60 s); the gang restarts elsewhere and runs again at 150 s.
    with mock.patch("provisioning.services.faults.timezone.now", return_value=at(0, seconds=100)):
        assert node_failed(node=node, actor=SYSTEM, last_checkpoint=SimulatedProvisioner().last_checkpoint) == {
            "restarted": 1,
            "failed": 0,
        }
    job.refresh_from_db()
    assert job.state == S.RESTARTING
    # The lost work is reported: 100 s - 60 s, on the allocation and per fault.
    assert (job.restarts, job.goodput_lost_ms, job.checkpoint_at) == (1, 40_000, at(0, seconds=60))
    assert list(AllocationFault.objects.values_list("lost_ms", "outcome")) == [(40_000, "restarted")]
    allocation_transition(allocation=job, to=S.PROVISIONING, actor=SYSTEM, at=at(0, seconds=120))
    allocation_transition(allocation=job, to=S.RUNNING, actor=SYSTEM, at=at(0, seconds=150))
    stop(job, at(0, seconds=200))
    pieces = sorted((i.start_ms - to_ms(BASE), (i.end_ms or 0) - to_ms(BASE)) for i in UsageInterval.objects.all())
    assert pieces == [(0, 60_000), (150_000, 200_000)]
    assert sum(i.quantity_milli or 0 for i in UsageInterval.objects.all()) == 2 * (60_000 + 50_000)


def test_intervals_split_at_hour_boundaries_and_windows_close_after_grace(acme):
    load_fleet()
    price("3.60")
    allocation = run(place(acme, gpus=1), at(-0.5))  # 09:59:30
    windows_close(now=at(9))  # 09:00 window ends 10:00 + 10 min grace: not yet, and nothing is cut
    assert not rollups(acme)
    assert not UsageInterval.objects.filter(end_ms__isnull=False).exists()
    report = windows_close(now=at(10, seconds=1))  # cut at 10:00 as the 09:00 window closes
    assert (report.cut, report.pieces, report.rollups, report.late) == (1, 1, 1, 0)
    assert UsageInterval.objects.get(end_ms=None).start_ms == to_ms(BASE)
    [first] = rollups(acme)
    assert (first.window_ms, first.quantity_milli, first.meter_value) == (to_ms(BASE) - 3_600_000, 30_000, 30)
    assert first.amount == Decimal("0.03")  # 30 s at 3.60/h
    stop(allocation, at(0.5))
    windows_close(now=at(70, seconds=1))
    assert [(r.window_ms - to_ms(BASE), r.quantity_milli) for r in rollups(acme)] == [(-3_600_000, 30_000), (0, 30_000)]


def test_a_price_change_mid_hour_splits_usage_and_the_invoice(acme):
    load_fleet()
    price("2.00")
    price("4.00", since=at(30))
    stop(run(place(acme, gpus=1), at(15)), at(45))
    windows_close(now=at(80))
    assert sorted((i.quantity_milli, i.price and i.price.unit_price_per_hour) for i in UsageInterval.objects.all()) == [
        (900_000, Decimal("2.00")),
        (900_000, Decimal("4.00")),
    ]
    # One rollup per price in the window: each goes to its price's own Stripe meter, billed at its own price.
    before, after = sorted(rollups(acme), key=lambda r: r.price.effective_from)
    assert (before.quantity_milli, before.amount, before.meter_value) == (900_000, Decimal("0.50"), 900)
    assert (after.quantity_milli, after.amount, after.meter_value) == (900_000, Decimal("1.00"), 900)
    assert before.identifier != after.identifier
    invoice = invoice_for(tenant=acme, start=BASE, end=at(60), now=at(80))
    assert [(line["unit_price"], line["quantity"], line["amount"]) for line in invoice.lines] == [
        (Decimal("2.00"), Decimal("0.250000"), Decimal("0.50")),
        (Decimal("4.00"), Decimal("0.250000"), Decimal("1.00")),
    ]
    assert invoice.total == Decimal("1.50")


def test_an_open_interval_is_cut_at_a_price_change_while_it_runs(acme):
    load_fleet()
    price("2.00")
    price("4.00", since=at(30))
    allocation = run(place(acme, gpus=1), at(15))
    windows_close(now=at(61))  # cut at 10:30 (price) and 11:00 (hour) while it runs
    stop(allocation, at(75))
    windows_close(now=at(140))
    assert sorted((r.window_ms - to_ms(BASE), r.quantity_milli, r.amount) for r in rollups(acme)) == [
        (0, 900_000, Decimal("0.50")),
        (0, 1_800_000, Decimal("2.00")),
        (3_600_000, 900_000, Decimal("1.00")),
    ]


def test_usage_arriving_after_its_window_closed_is_a_late_adjustment(acme):
    load_fleet()
    price("2.00")
    stop(run(place(acme, gpus=1), at(0)), at(10))
    windows_close(now=at(71))
    [on_time] = rollups(acme)
    # A provider reports, late, an allocation that ran 10:20-10:30 in the closed window.
    stop(run(place(acme, gpus=1), at(20)), at(30))
    report = windows_close(now=at(72))
    assert (report.rollups, report.late) == (1, 1)
    first, late = rollups(acme)
    assert (first.pk, first.quantity_milli, first.seq) == (on_time.pk, 600_000, 0)  # the closed rollup is untouched
    assert (late.window_ms, late.seq, late.quantity_milli) == (on_time.window_ms, 1, 600_000)
    assert late.identifier.endswith(":late-1")
    assert late.identifier != first.identifier


def test_a_start_reported_late_is_cut_into_its_hours(acme):
    load_fleet()
    price("2.00")
    windows_close(now=at(125))  # the ledger has cut through 12:00
    late = place(acme, gpus=1)
    run(late, at(30))  # ran since 10:30, reported now
    windows_close(now=at(130))
    assert [(r.window_ms - to_ms(BASE), r.quantity_milli) for r in rollups(acme)] == [
        (0, 1_800_000),
        (3_600_000, 3_600_000),
    ]
    assert UsageInterval.objects.get(end_ms=None).start_ms == to_ms(at(120))


def test_closing_windows_again_changes_nothing(acme):
    load_fleet()
    price("2.00")
    stop(run(place(acme, gpus=2), at(0)), at(0, seconds=1.5))
    first = windows_close(now=at(71))
    again = windows_close(now=at(71))
    later = windows_close(now=at(500))
    assert (first.rollups, again.rollups, later.rollups) == (1, 0, 0)
    [rollup] = rollups(acme)
    assert (rollup.quantity_milli, rollup.meter_value) == (3000, 3)


def test_meter_values_carry_the_remainder_to_the_next_rollup(acme):
    load_fleet()
    for hour in range(3):  # 0.4 s, 0.4 s, 0.4 s in three windows: 1,200 milli-GPU-seconds in all
        stop(run(place(acme, gpus=1), at(60 * hour)), at(60 * hour, seconds=0.4))
    windows_close(now=at(300))
    assert [(r.quantity_milli, r.meter_value, r.push_state) for r in rollups(acme)] == [
        (400, 0, "nothing"),
        (400, 0, "nothing"),
        (400, 1, "pending"),
    ]


lifecycles = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=6 * 3600),  # start, seconds after BASE
        st.integers(min_value=0, max_value=3 * 3600),  # running time
        st.sampled_from(["stop", "fault", "open"]),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lives=lifecycles, closes=st.lists(st.integers(min_value=0, max_value=10 * 3600), max_size=4))
def test_closed_rollups_always_sum_to_the_intervals(acme, lives, closes):
    """For random lifecycles and window closings at random times, every milli-GPU-second is rolled up once."""
    final = BASE + timedelta(days=2, minutes=30)  # the last window (ending at +2 days) is due too
    for allocation in Allocation.objects.filter(state=S.RUNNING):  # what an earlier example left running
        stop(allocation, final)
    for model in (UsageRollup, UsageInterval, MeterTotal, MeteringLock):
        model.objects.all().delete()
    if not Node.objects.exists():
        load_fleet()
    expected = 0
    events = sorted(
        [(start, "run", length, how) for start, length, how in lives] + [(c, "close", 0, "") for c in closes]
    )
    running = []
    for when, kind, length, how in events:
        moment = BASE + timedelta(seconds=when)
        if kind == "close":
            windows_close(now=moment)
            continue
        allocation = run(place(acme, gpus=1), moment)
        end = moment + timedelta(seconds=length)
        if how == "stop":
            stop(allocation, end)
        elif how == "fault":
            allocation_transition(allocation=allocation, to=S.FAILED, actor=SYSTEM, at=end)
        else:
            running.append(allocation)
            length = (to_ms(final) // 3_600_000 * 3_600_000 - to_ms(moment)) // 1000  # cut at the last hour
        expected += length * 1000
    windows_close(now=final)
    closed = UsageInterval.objects.filter(end_ms__isnull=False)
    assert sum(i.quantity_milli or 0 for i in closed) == expected
    assert sum(r.quantity_milli for r in UsageRollup.objects.all()) == expected
    assert not closed.filter(batch=None).exists()
    assert sum(r.meter_value for r in UsageRollup.objects.all()) == expected // 1000
