"""The placement section and tasks queued on commit: a task never runs inside the section that queued it.

Transactional: the point is what happens at a real commit (see also tests/api/test_default_path.py)."""

from typing import Any

import pytest
from django.db import transaction

from core.tasks import enqueue
from provisioning.fleet_cache import FLEET, placement_section

pytestmark = pytest.mark.django_db(transaction=True)


class InlineTask:
    """What an eager Celery task does when sent: it runs, in this thread."""

    name = "tests.inline"

    def __init__(self) -> None:
        self.ran_in_section: list[bool] = []

    def delay(self, *args: Any) -> None:
        self.ran_in_section.append(FLEET.depth > 0)


def test_a_task_queued_in_a_section_runs_once_the_section_is_left() -> None:
    task = InlineTask()
    with placement_section():
        with placement_section():  # a nested section commits with the outer one
            enqueue(task, 1)  # type: ignore[arg-type]
        enqueue(task, 2)  # type: ignore[arg-type]
        assert task.ran_in_section == []
    assert task.ran_in_section == [False, False]


def test_a_task_of_a_rolled_back_section_is_never_sent() -> None:
    task = InlineTask()

    def fail_after_queueing() -> None:
        with placement_section():
            enqueue(task, 1)  # type: ignore[arg-type]
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_after_queueing()
    assert task.ran_in_section == []


def test_a_section_entered_while_another_one_commits_is_refused() -> None:
    entered: list[BaseException] = []

    def place_again() -> None:  # a raw on-commit hook, not sent through enqueue
        try:
            with placement_section():
                pass
        except RuntimeError as error:
            entered.append(error)

    with placement_section():
        transaction.on_commit(place_again)
    assert [str(e) for e in entered] == ["placement_section entered while an enclosing section commits"]
