"""A confidential VM runs only after fresh evidence from its host's TEE was verified, every verdict is recorded and
audited, and the workload's secrets reach the guest only after that, sealed to a key made inside the TEE."""

from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.test import override_settings
from django.utils import timezone

from compliance.services.secrets import secret_create
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from provisioning.domain.attestation_evidence import GuestKeys, b64e, open_sealed, sign
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import SecretRef, Workload
from provisioning.drivers.base import SimulatedProvisioner, simulated_node_key, simulated_node_public_key
from provisioning.models import Allocation, Attestation, AttestationChallenge, Node
from provisioning.services.attestation import (
    Verdict,
    attestation_challenge,
    attestation_credential,
    attestation_release,
    attestation_submit,
    attested,
)
from provisioning.services.fleet import node_attestation_key_set
from provisioning.services.placing import AllocationSpec
from tests.support import SYSTEM, assert_problem
from tests.support.billing import load_fleet

HOST = "euw1b-01"  # the small fleet's confidential host (TDX), in the hall fenced for EU sovereign tenants
SECRET_VALUE = "hf_the-model-weights-token-0123456789"


class RefusingVerifier:
    name = "refusing"

    def verify(self, *, allocation, evidence):
        return Verdict(False, "measurement does not match the reference", outcome="refused")


@pytest.fixture
def sovereign_acme(acme):
    load_fleet()
    acme.residency_jurisdictions = ["EU"]
    acme.sovereign = True
    acme.save()
    return acme


@pytest.fixture
def keyed(sovereign_acme):
    """The operator registered the simulated host's attestation key."""
    node_attestation_key_set(
        node=Node.objects.get(hostname=HOST), public_key=simulated_node_public_key(HOST), actor=SYSTEM
    )
    return sovereign_acme


def confidential(tenant, workload=None, provision=True):
    spec = AllocationSpec(rung="confidential_vm", gpu_models=("H200-141GB",), gpus=1)
    allocation = allocation_request(tenant=tenant, name="secret", spec=spec, actor=SYSTEM, workload=workload)
    if provision:
        SimulatedProvisioner().provision(allocation.pk)
        allocation.refresh_from_db()
    return allocation


def evidence_for(target, nonce, *, key=None, guest=None, **claims):
    body = {
        "allocation": target.pk,
        "host": HOST,
        "eat_nonce": nonce,
        "tee": "tdx",
        "gpu_cc_mode": "on",
        "measurements": {"launch": "ab" * 48},
        "tee_pubkey": (guest or GuestKeys.generate()).public_b64,
        **claims,
    }
    return sign(key or simulated_node_key(HOST), body)


def verdicts(allocation):
    return list(Attestation.objects.filter(allocation=allocation).order_by("id").values_list("outcome", flat=True))


def audited(allocation, action="allocation.attested"):
    return [e.data for e in AuditEvent.objects.filter(action=action, target_id=str(allocation.pk)).order_by("seq")]


# --- the simulated fleet plays the guest ------------------------------------------------------------------


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_the_simulated_guest_attests_with_signed_nonce_bound_evidence_and_then_runs(keyed):
    allocation = confidential(keyed)
    assert allocation.state == S.RUNNING
    [record] = Attestation.objects.filter(allocation=allocation)
    assert (record.verified, record.outcome, record.verifier) == (True, "verified", "node-key")
    claims = record.evidence["claims"]
    assert (claims["tee"], claims["gpu_cc_mode"], claims["host"]) == ("tdx", "on", HOST)
    challenge = AttestationChallenge.objects.get(allocation=allocation)
    assert challenge.nonce == claims["eat_nonce"] == record.nonce
    assert challenge.used_at is not None
    assert record.released_at is not None  # the guest took its secrets, after the verdict
    assert [d["outcome"] for d in audited(allocation)] == ["verified"]
    assert len(audited(allocation, "allocation.secrets_released")) == 1


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_a_host_without_a_registered_key_fails_the_allocation(sovereign_acme):
    allocation = confidential(sovereign_acme)
    assert allocation.state == S.FAILED
    assert "no attestation key is registered" in allocation.failure_reason
    assert verdicts(allocation) == ["unverifiable"]
    assert not attested(allocation)


@override_settings(
    LADDER_SIM_PROVISION_SECONDS=0, LADDER_ATTESTATION_VERIFIER="tests.provisioning.test_attestation.RefusingVerifier"
)
def test_a_pluggable_verifier_that_refuses_fails_the_allocation(keyed):
    allocation = confidential(keyed)
    assert allocation.state == S.FAILED
    assert "measurement does not match" in allocation.failure_reason
    assert [d["verifier"] for d in audited(allocation)] == ["refusing"]


# --- forged, stale and refused evidence --------------------------------------------------------------------


@pytest.fixture
def waiting(keyed, settings):
    """A confidential VM provisioning, its guest not yet attested (the simulated one has not had its turn)."""
    settings.LADDER_SIM_PROVISION_SECONDS = 3600
    return confidential(keyed)


def test_evidence_signed_by_another_key_is_forged_and_changes_nothing(waiting):
    challenge = attestation_challenge(allocation=waiting)
    forged = evidence_for(waiting, challenge.nonce, key=Ed25519PrivateKey.generate())
    record = attestation_submit(allocation=waiting, evidence=forged, actor=SYSTEM)
    assert (record.verified, record.outcome) == (False, "forged")
    assert "does not verify" in record.detail
    waiting.refresh_from_db()
    assert waiting.state == S.PROVISIONING  # forged evidence is not the host's word: the guest may still attest
    assert AttestationChallenge.objects.get(pk=challenge.pk).used_at is None
    assert [d["outcome"] for d in audited(waiting)] == ["forged"]


def test_evidence_for_another_allocation_or_tampered_claims_is_forged(waiting):
    nonce = attestation_challenge(allocation=waiting).nonce
    other = evidence_for(waiting, nonce, allocation=waiting.pk + 1)
    tampered = evidence_for(waiting, nonce)
    tampered["claims"]["gpu_cc_mode"] = "off"  # after signing
    unsigned = {"tee": "tdx", "gpu_cc_mode": "on"}  # the old annotation's shape
    for evidence in (other, tampered, unsigned):
        assert attestation_submit(allocation=waiting, evidence=evidence, actor=SYSTEM).outcome == "forged"
    assert not attested(waiting)


def test_a_reused_an_expired_or_an_unissued_nonce_is_stale(waiting):
    now = timezone.now()
    first = attestation_challenge(allocation=waiting, now=now)
    assert attestation_submit(allocation=waiting, evidence=evidence_for(waiting, first.nonce), actor=SYSTEM).verified
    replayed = attestation_submit(allocation=waiting, evidence=evidence_for(waiting, first.nonce), actor=SYSTEM)
    assert (replayed.outcome, replayed.detail) == ("stale", "the nonce was already used")

    old = attestation_challenge(allocation=waiting, now=now - timedelta(minutes=10))
    expired = attestation_submit(allocation=waiting, evidence=evidence_for(waiting, old.nonce), actor=SYSTEM, now=now)
    assert (expired.outcome, expired.detail) == ("stale", "the nonce has expired")

    made_up = attestation_submit(allocation=waiting, evidence=evidence_for(waiting, "guessed"), actor=SYSTEM)
    assert (made_up.outcome, made_up.detail) == ("stale", "the nonce was not issued to this allocation")
    assert [d["outcome"] for d in audited(waiting)] == ["verified", "stale", "stale", "stale"]


def test_authentic_evidence_of_the_wrong_tee_is_refused_and_fails_the_allocation(waiting):
    nonce = attestation_challenge(allocation=waiting).nonce
    record = attestation_submit(allocation=waiting, evidence=evidence_for(waiting, nonce, tee="snp"), actor=SYSTEM)
    assert (record.outcome, record.detail) == ("refused", "the evidence claims TEE 'snp'; the host is declared tdx")
    waiting.refresh_from_db()
    assert waiting.state == S.FAILED


# --- secrets only after the verdict ---------------------------------------------------------------------------


@pytest.fixture
def with_secret(keyed, settings):
    settings.LADDER_SIM_PROVISION_SECONDS = 3600
    secret_create(tenant=keyed, name="HF_TOKEN", value=SECRET_VALUE, actor=SYSTEM)
    workload = Workload(image="nvcr.io/nvidia/pytorch:25.01-py3", secrets=(SecretRef("HF_TOKEN"),))
    return confidential(keyed, workload)


def guest_url(allocation, step):
    return f"/api/v1/attestation/{allocation.pk}/{step}"


def as_guest(api, allocation):
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {attestation_credential(allocation.pk)}")
    return client


def test_the_guest_gets_its_secrets_sealed_to_its_tee_key_only_after_a_verified_verdict(api, with_secret, settings):
    guest = as_guest(api, with_secret)
    challenge = guest.post(guest_url(with_secret, "challenge"))
    assert challenge.status_code == 200, challenge.content
    assert challenge.json()["tee"] == "tdx"
    assert challenge.json()["host"] == HOST
    assert SECRET_VALUE not in challenge.content.decode()

    # Forged evidence is refused (403) and releases nothing.
    nonce = challenge.json()["nonce"]
    forged = evidence_for(with_secret, nonce, key=Ed25519PrivateKey.generate())
    body = assert_problem(
        guest.post(guest_url(with_secret, "evidence"), {"evidence": forged}, format="json"), 403, "attestation_forged"
    )
    assert SECRET_VALUE not in str(body)
    assert audited(with_secret, "allocation.secrets_released") == []

    keys = GuestKeys.generate()
    evidence = evidence_for(with_secret, nonce, guest=keys)
    answer = guest.post(guest_url(with_secret, "evidence"), {"evidence": evidence}, format="json")
    assert answer.status_code == 200, answer.content
    assert SECRET_VALUE not in answer.content.decode()  # sealed: only the guest's TEE key opens it
    opened = open_sealed(answer.json()["release"], keys.private)
    assert opened["secrets"] == {"HF_TOKEN": SECRET_VALUE}
    assert audited(with_secret, "allocation.secrets_released")[0]["secrets"] == ["HF_TOKEN"]

    # The same evidence again is stale (409), and the verdict releases once.
    assert_problem(
        guest.post(guest_url(with_secret, "evidence"), {"evidence": evidence}, format="json"), 409, "attestation_stale"
    )
    record = Attestation.objects.get(allocation=with_secret, verified=True)
    with pytest.raises(Exception, match="already"):
        attestation_release(attestation=record, actor=SYSTEM)

    # The verdict moves the allocation to running at the next look (once the simulated VM has booted).
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    SimulatedProvisioner().status(with_secret.pk)
    with_secret.refresh_from_db()
    assert with_secret.state == S.RUNNING


def test_stale_evidence_through_the_api_is_refused_409(api, with_secret):
    guest = as_guest(api, with_secret)
    old = attestation_challenge(allocation=with_secret, now=timezone.now() - timedelta(hours=1))
    response = guest.post(
        guest_url(with_secret, "evidence"), {"evidence": evidence_for(with_secret, old.nonce)}, format="json"
    )
    assert_problem(response, 409, "attestation_stale")


def test_the_guest_endpoints_want_the_allocations_own_credential(api, with_secret, alice, charlie, operator):
    other = Allocation.objects.create(
        tenant=with_secret.tenant,
        name="other",
        rung="confidential_vm",
        performance="whole_gpu",
        security="confidential_vm",
        gpu_model=with_secret.gpu_model,
        hall=with_secret.hall,
        state=S.PROVISIONING,
        spec={},
        quota_milli=0,
        provisioner="simulated",
    )
    wrong = api()
    wrong.credentials(HTTP_AUTHORIZATION=f"Bearer {attestation_credential(other.pk)}")
    for client in (api(), api(alice), api(charlie), api(operator), wrong):
        for step in ("challenge", "evidence"):
            assert_problem(
                client.post(guest_url(with_secret, step), {"evidence": {}}, format="json"), 401, "not_authenticated"
            )
    # An allocation that does not exist answers the same.
    assert_problem(
        as_guest(api, with_secret).post(f"/api/v1/attestation/{other.pk + 100}/challenge"), 401, "not_authenticated"
    )
    assert not AttestationChallenge.objects.exists()


def test_a_guest_cannot_hoard_nonces(api, with_secret):
    guest = as_guest(api, with_secret)
    for _ in range(8):
        assert guest.post(guest_url(with_secret, "challenge")).status_code == 200
    assert_problem(guest.post(guest_url(with_secret, "challenge")), 409, "too_many_challenges")


@override_settings(LADDER_SIM_PROVISION_SECONDS=0, LADDER_ATTESTATION_DEADLINE_SECONDS=60)
def test_a_guest_that_never_attests_fails_at_the_deadline(sovereign_acme, time_machine):
    allocation = confidential(sovereign_acme, provision=False)
    stranger = b64e(Ed25519PrivateKey.generate().public_key().public_bytes_raw())
    node_attestation_key_set(node=Node.objects.get(hostname=HOST), public_key=stranger, actor=SYSTEM)
    SimulatedProvisioner().provision(allocation.pk)  # signed with the simulated key: forged against this one
    allocation.refresh_from_db()
    assert allocation.state == S.PROVISIONING
    time_machine.move_to(timezone.now() + timedelta(seconds=61))
    SimulatedProvisioner().status(allocation.pk)
    allocation.refresh_from_db()
    assert allocation.state == S.FAILED
    assert allocation.failure_reason == "attestation: no verified evidence in time"


def test_the_operator_registers_a_node_key_audited_and_checked(api, operator, acme, alice):
    load_fleet()
    node = Node.objects.get(hostname=HOST)
    url = f"/api/v1/ops/nodes/{node.pk}/attestation-key"
    ops = api(operator)
    assert_problem(ops.post(url, {"public_key": "not-a-key"}, format="json"), 422, "validation_error")
    assert_problem(
        api(alice).post(url, {"public_key": simulated_node_public_key(HOST)}, format="json"), 403, "permission_denied"
    )
    response = ops.post(url, {"public_key": simulated_node_public_key(HOST), "reason": "racked"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["attestation_key"] == simulated_node_public_key(HOST)
    assert response.json()["cpu_tee"] == "tdx"
    [event] = AuditEvent.objects.filter(action="node.attestation_key_set")
    assert (event.data["hostname"], event.data["reason"], event.data["previous"]) == (HOST, "racked", "")
