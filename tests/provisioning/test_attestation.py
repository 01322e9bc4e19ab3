"""A confidential VM runs only after a verifier accepted its attestation evidence, and the verdict is recorded."""

import pytest
from django.test import override_settings

from core.models import AuditEvent
from provisioning.models import Allocation, Attestation, Node
from provisioning.provisioners import SimulatedProvisioner
from provisioning.services.allocations import AllocationSpec, allocation_request
from provisioning.services.attestation import SimulatedVerifier, Verdict, attested
from provisioning.states import AllocationState as S
from tests.support import SYSTEM
from tests.support.billing import load_fleet


class RefusingVerifier:
    name = "refusing"

    def verify(self, *, allocation, evidence):
        return Verdict(False, "measurement does not match the reference")


def confidential(tenant):
    spec = AllocationSpec(rung="confidential_vm", gpu_models=("H200-141GB",), gpus=1)
    allocation = allocation_request(tenant=tenant, name="secret", spec=spec, actor=SYSTEM)
    SimulatedProvisioner().provision(allocation.pk)
    allocation.refresh_from_db()
    return allocation


@pytest.fixture
def sovereign_acme(acme):
    load_fleet()
    acme.residency_jurisdictions = ["EU"]
    acme.sovereign = True
    acme.save()
    Node.objects.filter(cc_mode=True).update(cpu_tee="tdx")
    return acme


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_it_runs_only_after_a_verified_attestation(sovereign_acme):
    allocation = confidential(sovereign_acme)
    assert allocation.state == S.RUNNING
    [record] = Attestation.objects.filter(allocation=allocation)
    assert (record.verified, record.verifier) == (True, "simulated")
    assert record.evidence["tee"] == "tdx"
    assert record.evidence["gpu_cc_mode"] == "on"
    assert attested(allocation)
    assert AuditEvent.objects.filter(action="allocation.attested", target_id=str(allocation.pk)).exists()


@override_settings(
    LADDER_SIM_PROVISION_SECONDS=0, LADDER_ATTESTATION_VERIFIER="tests.provisioning.test_attestation.RefusingVerifier"
)
def test_refused_evidence_fails_the_allocation(sovereign_acme):
    allocation = confidential(sovereign_acme)
    assert allocation.state == S.FAILED
    assert "measurement does not match" in allocation.failure_reason
    assert not attested(allocation)


def test_the_simulated_verifier_wants_a_tee_and_the_gpu_in_cc_mode():
    judge, nobody = SimulatedVerifier(), Allocation()
    assert judge.verify(allocation=nobody, evidence={"tee": "snp", "gpu_cc_mode": "on"}).verified
    assert not judge.verify(allocation=nobody, evidence={"tee": None, "gpu_cc_mode": "on"}).verified
    assert not judge.verify(allocation=nobody, evidence={"tee": "tdx", "gpu_cc_mode": "off"}).verified
