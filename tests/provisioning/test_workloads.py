"""The pure workload rules: OCI references, what each rung takes, cloud-init user data, access details, and the
simulated fleet's output (``since`` and ``tail`` are arithmetic, any window agrees with the whole)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.os_images import OS_IMAGES, os_catalog
from provisioning.domain.user_data import os_user_data
from provisioning.domain.workload_access import access
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, image_parse, workload_check
from provisioning.domain.workloads import Checkpoint, Materials, Port, SecretRef, Volume, Workload
from provisioning.drivers import simulated

CATALOG = os_catalog()
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def check(w: Workload, rung: str) -> None:
    workload_check(w, rung=rung, registries=DEFAULT_REGISTRIES, os_images=CATALOG)


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag"),
    [
        ("pytorch/pytorch", "docker.io", "pytorch/pytorch", "latest"),
        ("ubuntu:24.04", "docker.io", "library/ubuntu", "24.04"),
        ("nvcr.io/nvidia/pytorch:25.01-py3", "nvcr.io", "nvidia/pytorch", "25.01-py3"),
        ("localhost:5000/team/app", "localhost:5000", "team/app", "latest"),
        ("ghcr.io/org/app@sha256:" + "a" * 64, "ghcr.io", "org/app", None),
    ],
)
def test_image_references_read_as_the_container_runtimes_read_them(
    text: str, registry: str, repository: str, tag: str | None
) -> None:
    ref = image_parse(text)
    assert (ref.registry, ref.repository, ref.tag) == (registry, repository, tag)


@pytest.mark.parametrize("text", ["", "UPPER/case", "a b", "ghcr.io/x@sha256:short", "x:" + "t" * 200, " padded"])
def test_malformed_image_references_are_refused(text: str) -> None:
    with pytest.raises(WorkloadInvalid) as refused:
        image_parse(text)
    assert refused.value.field == "image"


def test_each_rung_takes_what_it_can_run_and_names_what_it_cannot() -> None:
    full = Workload(
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=("python",),
        env=(("A", "1"),),
        secrets=(SecretRef("TOKEN"),),
        ports=(Port(8000, "http", "public"),),
        volumes=(Volume("/scratch", scratch_gb=10),),
    )
    for rung in ("container", "job", "serverless", "confidential_vm"):
        check(full, rung)
    check(Workload(os_image="rocky-9", cloud_init="#!/bin/sh\necho hi\n", ssh_keys=(1,)), "bare_metal")
    refusals = [
        (full, "vm", "image"),
        (Workload(image="nvcr.io/x/y"), "container", None),
        (Workload(image="nvcr.io/x/y", checkpoint=Checkpoint()), "container", "checkpoint"),
        (Workload(image="nvcr.io/x/y", ssh_keys=(1,)), "serverless", "ssh_keys"),
        (Workload(os_image="ubuntu-24.04", ports=(Port(80),)), "bare_metal", "ports"),
        (Workload(image="nvcr.io/x/y", ports=(Port(80), Port(81)), volumes=()), "container", None),
        (
            Workload(image="nvcr.io/x/y", ports=(Port(80, "http", "public"), Port(81, "http", "public"))),
            "serverless",
            "ports",
        ),
        (
            Workload(image="nvcr.io/x/y", volumes=(Volume("/a", scratch_gb=1), Volume("/a/b", scratch_gb=1))),
            "job",
            "volumes.1.mount_path",
        ),
        (Workload(image="nvcr.io/x/y", env=(("A", "1"),), secrets=(SecretRef("A"),)), "job", "secrets.0.name"),
        (
            Workload(image="docker.io/x/y", volumes=(Volume("/etc/passwd", scratch_gb=1),)),
            "job",
            "volumes.0.mount_path",
        ),
    ]
    for workload, rung, field in refusals:
        if field is None:
            check(workload, rung)
            continue
        with pytest.raises(WorkloadInvalid) as refused:
            check(workload, rung)
        assert refused.value.field == field, (rung, refused.value)


def test_a_workload_reads_back_as_it_was_stored() -> None:
    w = Workload(
        image="ghcr.io/org/app:1",
        command=("serve",),
        env=(("A", "1"),),
        secrets=(SecretRef("T", "file"),),
        ports=(Port(8080, "tcp", "tenant"),),
        volumes=(Volume("/data", dataset=4),),
        checkpoint=Checkpoint("/ckpt", 120),
        ssh_keys=(3,),
    )
    assert Workload.from_json(w.to_json()) == w


def test_user_data_gives_the_keys_variables_and_secret_files_to_the_images_user() -> None:
    ubuntu = OS_IMAGES[0]
    materials = Materials(secrets={"TOKEN": "s3cr3t"}, ssh_keys=("ssh-ed25519 AAAA k",), os_image=ubuntu)
    w = Workload(os_image=ubuntu.name, cloud_init="#cloud-config\npackages: [htop]\n", env=(("MODEL", 'say "hi"'),))
    data = yaml.safe_load(os_user_data(w, materials))
    assert data["packages"] == ["htop"]
    assert data["users"][-1] == {"name": "ubuntu", "ssh_authorized_keys": ["ssh-ed25519 AAAA k"]}
    assert data["write_files"][0] == {"path": "/etc/environment", "append": True, "content": 'MODEL="say \\"hi\\""\n'}
    assert data["write_files"][1]["path"] == "/etc/ladder/secrets/TOKEN"
    assert data["write_files"][1]["permissions"] == "0400"
    script = os_user_data(Workload(cloud_init="#!/bin/sh\necho hi\n"), materials)
    assert script.startswith("Content-Type: multipart/mixed")
    assert "#!/bin/sh" in script


def test_access_per_rung() -> None:
    def of(rung: str, w: Workload) -> dict:
        return access(
            allocation_id=7,
            tenant="acme",
            rung=rung,
            hall="h1",
            workload=w,
            base_domain="gpu.example",
            ssh_port=2222,
            endpoint_url=None,
            console_url="https://api/console",
        ).as_dict()

    vm = of("vm", Workload(ssh_keys=(1,), ports=(Port(8888, "http", "public"),)))
    assert vm["ssh"]["command"] == "ssh -p 2222 ldr-7@ssh.h1.gpu.example"
    assert vm["urls"] == {"8888": "https://ldr-7-8888.gpu.example/"}
    assert vm["console"] == "https://api/console"
    assert of("serverless", Workload(image="x"))["endpoint"] == "https://ldr-7.gpu.example/"
    assert of("job", Workload(image="x", ssh_keys=()))["ssh"] is None


def timeline(**kw: object) -> simulated.Timeline:
    base = dict(
        allocation_id=3,
        rung="job",
        hosts=("n1", "n2"),
        gpu_model="H100-SXM-80GB",
        created_at=T0 - timedelta(seconds=5),
        running_since=T0,
        ended_at=None,
        workload=Workload(image="x", command=("torchrun", "train.py"), checkpoint=Checkpoint("/ckpt", 60)),
        log_every=10.0,
        checkpoint_every=60.0,
    )
    return simulated.Timeline(**{**base, **kw})  # type: ignore[arg-type]


@given(seconds=st.integers(0, 5000), since=st.integers(-20, 5000), tail=st.none() | st.integers(1, 50))
def test_any_window_of_the_simulated_log_agrees_with_the_whole(seconds: int, since: int, tail: int | None) -> None:
    t = timeline()
    now = T0 + timedelta(seconds=seconds)
    whole = simulated.log_lines(t, now=now)
    after = T0 + timedelta(seconds=since)
    window = simulated.log_lines(t, now=now, since=after, tail=tail)
    expected = [line for line in whole if line.at > after]
    assert window == (expected[-tail:] if tail else expected)


def test_a_simulated_job_prints_its_command_steps_and_checkpoints_and_stops_when_it_ends() -> None:
    t = timeline(ended_at=T0 + timedelta(seconds=125))
    lines = simulated.log_lines(t, now=T0 + timedelta(hours=1))
    assert lines[0].text == "$ torchrun train.py"
    assert [line.text for line in lines if "checkpoint" in line.text] == [
        "saved checkpoint step-1 to /ckpt",
        "saved checkpoint step-2 to /ckpt",
    ]
    assert lines[-1].at == T0 + timedelta(seconds=120)
    assert simulated.last_checkpoint_step(t, T0 + timedelta(hours=1)) == 2
    reasons = [e.reason for e in simulated.events(t, now=T0 + timedelta(hours=1))]
    assert reasons == ["Scheduled", "Pulling", "Pulled", "Started", "CheckpointSaved", "CheckpointSaved", "Killing"]
    assert simulated.log_lines(timeline(running_since=None), now=T0) == []
