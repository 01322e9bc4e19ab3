"""The table of rungs: a row for every rung and every job framework, saying what docs/design.md §2 promises, and
one lookup that lays a framework's row over the job rung's."""

from __future__ import annotations

import pytest

from provisioning.domain.rungs import (
    DEFAULT_FRAMEWORK,
    FRAMEWORKS,
    RUNGS,
    SOFT_SHARING,
    BillingUnit,
    Framework,
    Performance,
    Rung,
    Security,
    rung_facts,
    rungs_where,
)


def test_every_rung_and_framework_has_its_row() -> None:
    assert list(RUNGS) == list(Rung)
    assert all(RUNGS[rung].rung is rung for rung in Rung)
    assert list(FRAMEWORKS) == list(Framework)
    assert all(FRAMEWORKS[f].framework is f for f in Framework)


@pytest.mark.parametrize(
    ("rung", "performance", "security", "unit"),
    [
        (Rung.BARE_METAL, {Performance.WHOLE_GPU}, Security.BARE_METAL, BillingUnit.NODE_SECONDS),
        (Rung.VM, {Performance.WHOLE_GPU}, Security.VM, BillingUnit.GPU_SECONDS),
        (Rung.CONFIDENTIAL_VM, {Performance.WHOLE_GPU}, Security.CONFIDENTIAL_VM, BillingUnit.GPU_SECONDS),
        (Rung.CONTAINER, {Performance.WHOLE_GPU, Performance.MIG}, Security.CONTAINER, BillingUnit.GPU_SECONDS),
        (Rung.JOB, {Performance.WHOLE_GPU}, Security.CONTAINER, BillingUnit.GPU_SECONDS),
        (
            Rung.SERVERLESS,
            {Performance.WHOLE_GPU, Performance.MIG, *SOFT_SHARING},
            Security.CONTAINER,
            BillingUnit.GPU_SECONDS,
        ),
    ],
)
def test_each_rung_gives_the_isolation_and_billing_unit_of_the_design(
    rung: Rung, performance: set[Performance], security: Security, unit: BillingUnit
) -> None:
    facts = rung_facts(rung)
    assert (set(facts.performance), facts.security, facts.unit) == (performance, security, unit)


def test_only_serverless_sells_soft_shares_and_only_vms_and_hosts_boot_an_os() -> None:
    assert [r for r in Rung if rung_facts(r).soft_sharing] == [Rung.SERVERLESS]
    assert [r for r in Rung if rung_facts(r).boots_os] == [Rung.BARE_METAL, Rung.VM]
    assert [r for r in Rung if rung_facts(r).runs_image] == [
        Rung.CONFIDENTIAL_VM,
        Rung.CONTAINER,
        Rung.JOB,
        Rung.SERVERLESS,
    ]


def test_jobs_restart_from_a_checkpoint_and_jobs_and_endpoints_survive_a_move() -> None:
    assert [r for r in Rung if rung_facts(r).restarts_from_checkpoint] == [Rung.JOB]
    assert [r for r in Rung if rung_facts(r).movable] == [Rung.JOB, Rung.SERVERLESS]
    assert [r for r in Rung if rung_facts(r).spans_nodes] == [Rung.BARE_METAL, Rung.JOB]


def test_bare_metal_takes_whole_nodes_confidential_vms_are_attested_and_vms_have_a_console() -> None:
    """design.md §3 rules 3 and 4: the placement engine, the offerings and the drivers read these, not rung names."""
    assert rungs_where(lambda f: f.whole_nodes) == (Rung.BARE_METAL,)
    assert rungs_where(lambda f: f.attested) == (Rung.CONFIDENTIAL_VM,)
    assert rungs_where(lambda f: f.serial_console) == (Rung.VM,)
    assert rungs_where(lambda f: f.endpoint) == (Rung.SERVERLESS,)
    assert rungs_where(lambda f: f.unit is BillingUnit.NODE_SECONDS) == rungs_where(lambda f: f.whole_nodes)
    assert all(rung_facts(Rung.JOB, framework).attested is False for framework in Framework)


def test_a_slurm_cluster_is_a_job_with_ssh_whole_dirty_hosts_and_its_own_namespace() -> None:
    slurm = rung_facts(Rung.JOB, Framework.SLURM)
    assert slurm.launcher is FRAMEWORKS[Framework.SLURM]
    assert (slurm.takes_ssh_keys, slurm.leaves_host_dirty, slurm.namespace_suffix) == (True, True, "-slurm")
    assert (slurm.takes_ports, slurm.needs_image) == (False, False)
    assert slurm.launcher is not None
    assert slurm.launcher.whole_hosts
    # The rest is the job rung's: the same isolation, unit, checkpoint restart and FOCUS names.
    job = RUNGS[Rung.JOB]
    assert (slurm.security, slurm.unit, slurm.restarts_from_checkpoint, slurm.focus) == (
        job.security,
        job.unit,
        job.restarts_from_checkpoint,
        job.focus,
    )


@pytest.mark.parametrize("framework", [Framework.TORCHRUN, Framework.MPI, Framework.RAY])
def test_the_other_frameworks_are_a_plain_gang(framework: Framework) -> None:
    facts = rung_facts("job", framework)
    assert (facts.takes_ssh_keys, facts.leaves_host_dirty, facts.namespace_suffix) == (False, False, "")
    assert facts.launcher is not None
    assert not facts.launcher.whole_hosts


def test_the_job_rung_without_a_framework_is_the_default_one_and_other_rungs_have_none() -> None:
    assert rung_facts("job").launcher is FRAMEWORKS[DEFAULT_FRAMEWORK]
    assert rung_facts("vm", "torchrun") is RUNGS[Rung.VM]  # a stored workload names the default on every rung
    assert rung_facts("container").launcher is None


def test_only_bare_metal_and_slurm_leave_their_hosts_dirty() -> None:
    dirty = [
        (r.value, f)
        for r in Rung
        for f in ([*Framework] if r is Rung.JOB else [None])
        if rung_facts(r, f).leaves_host_dirty
    ]
    assert dirty == [("bare_metal", None), ("job", Framework.SLURM)]


def test_an_unknown_rung_or_framework_is_an_error() -> None:
    with pytest.raises(ValueError, match="rack"):
        rung_facts("rack")
    with pytest.raises(ValueError, match="pbs"):
        rung_facts("job", "pbs")


def test_each_rung_has_its_own_focus_service_and_portal_words() -> None:
    services = [facts.focus.service for facts in RUNGS.values()]
    assert len(set(services)) == len(services)  # FOCUS: one ServiceName per rung
    for facts in RUNGS.values():
        assert facts.focus.subcategory
        assert facts.focus.resource_type
        assert facts.words.title
        assert facts.words.what
        assert facts.words.unit
        assert facts.words.item == ("node" if facts.unit is BillingUnit.NODE_SECONDS else "GPU")
