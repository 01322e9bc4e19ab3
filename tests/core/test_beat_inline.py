"""``manage.py beat_inline``: the embedded default's scheduler runs every beat entry in-process, so allocations
follow their driver without a broker, a worker or a read that writes."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from provisioning.domain.states import AllocationState as S
from provisioning.models import Allocation
from tests.support.billing import load_fleet, place


def test_it_runs_every_beat_entry_and_reconciles(acme: Any, settings: Any) -> None:
    load_fleet()
    allocation = place(acme, gpus=1)  # placed; its provisioning task waits for a commit that never comes here
    Allocation.objects.filter(pk=allocation.pk).update(state=S.PROVISIONING)
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    out = StringIO()
    call_command("beat_inline", "--once", stdout=out)
    ran = {line.split(":")[0] for line in out.getvalue().splitlines()}
    assert ran == set(settings.CELERY_BEAT_SCHEDULE)
    assert Allocation.objects.get(pk=allocation.pk).state == S.RUNNING


def test_it_refuses_to_run_tasks_in_process_without_the_setting(settings: Any) -> None:
    settings.LADDER_TASKS_INLINE = False
    with pytest.raises(CommandError, match="LADDER_TASKS_INLINE"):
        call_command("beat_inline", "--once")
