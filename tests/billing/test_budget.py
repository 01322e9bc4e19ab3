"""Budgets: alerts at 50/80/100% once a month (a notification and an e-mail), and the optional hard stop."""

from decimal import Decimal

import pytest
from django.core import mail
from django.test import override_settings

from billing.models import BudgetAlert, Notification
from billing.services.accounts import PaymentRequired, admission_check, budget_set
from lifecycle.services.customers import budget_enforce
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import SimulatedProvisioner, allocations_reconcile
from provisioning.models import Allocation
from tests.support import SYSTEM, assert_problem
from tests.support.billing import at, load_fleet, place, price, run


def test_it_alerts_at_each_threshold_once(acme, alice):
    load_fleet()
    price("1.00")  # one GPU for one hour: 1.00
    budget_set(tenant=acme, monthly=Decimal("10.00"), hard_stop=False, actor=SYSTEM)
    run(place(acme, gpus=1), at(0))
    assert budget_enforce(tenant=acme, now=at(4 * 60)) == []  # 4.00: under 50%
    assert budget_enforce(tenant=acme, now=at(5 * 60)) == [50]  # open usage counts: 5.00
    assert budget_enforce(tenant=acme, now=at(5 * 60 + 30)) == []
    assert budget_enforce(tenant=acme, now=at(10 * 60)) == [80, 100]
    assert list(BudgetAlert.objects.values_list("threshold", flat=True).order_by("threshold")) == [50, 80, 100]
    subjects = [n.subject for n in Notification.objects.order_by("id")]
    assert subjects == [
        "Ladder: 50% of your monthly budget used",
        "Ladder: 80% of your monthly budget used",
        "Ladder: 100% of your monthly budget used",
    ]
    assert len(mail.outbox) == 0  # e-mail goes after commit; the test transaction never commits


def test_alerts_are_emailed_after_commit(acme, alice, django_capture_on_commit_callbacks):
    load_fleet()
    price("1.00")
    budget_set(tenant=acme, monthly=Decimal("1.00"), hard_stop=False, actor=SYSTEM)
    run(place(acme, gpus=1), at(0))
    with django_capture_on_commit_callbacks(execute=True):
        budget_enforce(tenant=acme, now=at(30))
    [message] = mail.outbox
    assert message.to == [alice.email]
    assert "50%" in message.subject
    assert "0.50 USD" in message.body


@override_settings(LADDER_SIM_CHECKPOINT_SECONDS=600)
def test_the_hard_stop_refuses_new_work_and_stops_what_runs(acme, alice, api, time_machine):
    load_fleet()
    price("1.00")
    price("1.00", rung="job")
    service = run(place(acme, gpus=1), at(0))
    job = run(place(acme, rung="job", gpus=1), at(0))
    budget_set(tenant=acme, monthly=Decimal("2.00"), hard_stop=True, actor=SYSTEM)
    assert budget_enforce(tenant=acme, now=at(61)) == [50, 80, 100]  # two GPUs for 61 minutes: 2.03
    service.refresh_from_db()
    job.refresh_from_db()
    assert service.state == S.STOPPING  # stopped at once
    assert service.state_changed_at == at(61)  # at the time of the check, not of the wall clock
    assert job.state == S.RUNNING  # a job stops at its next checkpoint, not mid-step
    assert job.stop_at_checkpoint_since == at(61)
    assert Notification.objects.filter(kind="budget_stop", subject__contains=job.name).exists()
    assert SimulatedProvisioner().next_checkpoint(job) == at(70)  # checkpoints every 10 minutes of running
    time_machine.move_to(at(75))  # the clock the driver and the API read: past that checkpoint, in the same month
    allocations_reconcile()
    assert Allocation.objects.get(pk=job.pk).state in (S.STOPPING, S.STOPPED)
    body = assert_problem(
        api(alice).post(
            "/api/v1/allocations",
            {"name": "more", "rung": "container", "gpu_model": "H100-SXM-80GB", "gpus": 1},
            format="json",
        ),
        402,
        "budget_exceeded",
    )
    assert body["budget"] == "2.00"


def test_without_a_hard_stop_work_goes_on(acme):
    load_fleet()
    price("1.00")
    budget_set(tenant=acme, monthly=Decimal("0.50"), hard_stop=False, actor=SYSTEM)
    allocation = run(place(acme, gpus=1), at(0))
    budget_enforce(tenant=acme, now=at(120))
    allocation.refresh_from_db()
    assert allocation.state == S.RUNNING
    admission_check(tenant=acme)  # no exception: new work is allowed


def test_the_admission_check_counts_usage_still_running(acme):
    load_fleet()
    price("1.00")
    budget_set(tenant=acme, monthly=Decimal("100.00"), hard_stop=True, actor=SYSTEM)
    run(place(acme, gpus=1), at(0))  # 2026-11-02 10:00 and still running
    admission_check(tenant=acme, now=at(99 * 60))  # 99.00 spent this month: under the budget
    with pytest.raises(PaymentRequired) as refused:
        admission_check(tenant=acme, now=at(100 * 60))  # 100.00: the budget is reached
    assert (refused.value.code, refused.value.status) == ("budget_exceeded", 402)
