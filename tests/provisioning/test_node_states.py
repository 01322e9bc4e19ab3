"""Node state changes: drain, undrain, quarantine, fail — the transition table and compare-and-swap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

import pytest
from django.db import connection

from core.actor import Actor
from core.errors import Conflict
from core.models import AuditEvent
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import NODE_TRANSITIONS, Node, NodeState
from provisioning.services.fleet import fleet_load, node_drain, node_fail, node_quarantine, node_undrain
from tests.support.fleet_documents import small_fleet

SIMULATED = SimulatedProvisioner().last_checkpoint

ACTOR = Actor.system("tests")
SERVICES: dict[str, Callable[..., Node]] = {
    "drain": node_drain,
    "undrain": node_undrain,
    "quarantine": node_quarantine,
    "fail": partial(node_fail, last_checkpoint=SIMULATED),
}
S = NodeState


@pytest.fixture
def node(db):
    fleet_load(document=small_fleet(), actor=ACTOR)
    return Node.objects.get(hostname="euw1a-01")


def put(node: Node, state: NodeState) -> Node:
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()
    return node


def test_the_table_is_what_the_operators_were_promised():
    allowed = {action: (set(t.sources), t.target) for action, t in NODE_TRANSITIONS.items()}
    assert allowed == {
        "drain": ({S.READY}, S.DRAINING),
        "undrain": ({S.DRAINING, S.MAINTENANCE, S.QUARANTINED}, S.READY),
        "quarantine": ({S.REGISTERING, S.READY, S.DRAINING, S.MAINTENANCE, S.FAILED}, S.QUARANTINED),
        "fail": (set(S) - {S.FAILED}, S.FAILED),
    }


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("action", list(SERVICES))
def test_every_action_from_every_state(node, action, state):
    put(node, state)
    transition = NODE_TRANSITIONS[action]
    if state in transition.sources:
        changed = SERVICES[action](node=node, actor=ACTOR)
        assert changed.state == transition.target
        assert Node.objects.get(pk=node.pk).state == transition.target
    else:
        with pytest.raises(Conflict) as refused:
            SERVICES[action](node=node, actor=ACTOR)
        assert refused.value.code == "invalid_transition"
        assert refused.value.status == 409
        assert f"is {state}" in refused.value.detail
        assert Node.objects.get(pk=node.pk).state == state


def test_a_sanitizing_node_is_never_handed_back_by_an_operator(node):
    put(node, S.SANITIZING)
    for service in (node_drain, node_undrain, node_quarantine):
        with pytest.raises(Conflict):
            service(node=node, actor=ACTOR)
    assert SERVICES["fail"](node=node, actor=ACTOR).state == S.FAILED
    with pytest.raises(Conflict):
        node_undrain(node=node, actor=ACTOR)  # a failed node comes back through quarantine only
    node_quarantine(node=node, actor=ACTOR)
    assert node_undrain(node=node, actor=ACTOR).state == S.READY


def test_each_change_is_audited_with_its_reason(node):
    before = node.state_changed_at
    node_drain(node=node, actor=ACTOR, reason="firmware upgrade")
    node_undrain(node=node, actor=ACTOR)
    events = list(AuditEvent.objects.filter(target_type="node").order_by("seq"))
    pk = str(node.pk)
    assert [(e.action, e.target_id) for e in events] == [("node.drained", pk), ("node.undrained", pk)]
    assert events[0].data == {"hostname": "euw1a-01", "from": "ready", "to": "draining", "reason": "firmware upgrade"}
    assert events[1].data == {"hostname": "euw1a-01", "from": "draining", "to": "ready", "reason": ""}
    assert Node.objects.get(pk=node.pk).state_changed_at > before


def test_a_refused_change_is_not_audited(node):
    with pytest.raises(Conflict):
        node_undrain(node=node, actor=ACTOR)
    assert not AuditEvent.objects.filter(target_type="node").exists()


def test_the_service_judges_the_stored_state_not_the_callers_copy(node):
    stale = Node.objects.get(pk=node.pk)  # says ready
    put(node, S.DRAINING)
    with pytest.raises(Conflict):
        node_drain(node=stale, actor=ACTOR)
    assert node_undrain(node=stale, actor=ACTOR).state == S.READY


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_operators_draining_at_once_drain_it_once():
    fleet_load(document=small_fleet(), actor=ACTOR)
    node = Node.objects.get(hostname="euw1a-01")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def drain() -> None:
        try:
            barrier.wait()
            node_drain(node=Node.objects.get(pk=node.pk), actor=ACTOR)
            outcomes.append("drained")
        except Conflict as refused:
            outcomes.append(refused.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=drain) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(outcomes) == ["drained", "invalid_transition"]
    assert AuditEvent.objects.filter(action="node.drained").count() == 1
