"""A tenant's workload across the apps: admitted before placement, resolved when a driver renders it, and what it
wrote kept as the tenant's governed data when it ends.

- ``workload_admit``: the spec's own rules (``provisioning.domain.workload_rules``), then what it names: the
tenant's SSH keys
  (tenancy), secrets and datasets (compliance). Datasets pin the placement to their region: a request that names
  another region is refused 409 ``residency``.
- ``allocation_materials``: secret values, pull credentials, SSH public keys, signed dataset links and the OS
  image, for the driver to render into the tenant's own namespace (installed in ``lifecycle/apps.py``).
- ``endpoint_call``: a call to a serverless endpoint of the simulated fleet, which Ladder serves itself, after the
  gateway's own check (``lifecycle.services.gateway``).
- ``workload_output_keep``: the logs and last checkpoint a workload left become ``job_log`` / ``checkpoint``
  assets with lineage to the datasets it mounted, in the region it ran in.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from compliance.domain.retention import Category
from compliance.models import AssetState, DataAsset, TenantSecret
from compliance.services.assets import data_asset_create
from compliance.services.capture import inference_payload_capture, kept
from compliance.services.downloads import asset_download_url
from compliance.services.secrets import secret_values
from core.actor import Actor
from core.errors import Conflict, Invalid
from lifecycle.services.gateway import endpoint_admit, endpoint_called
from provisioning.domain.fleet_document import MAX_GPUS_PER_NODE
from provisioning.domain.os_images import DEFAULT_OS_IMAGE
from provisioning.domain.rungs import rung_facts
from provisioning.domain.volumes import MOUNTABLE, VolumeKind
from provisioning.domain.workload_rules import WorkloadInvalid, image_parse, workload_check
from provisioning.domain.workloads import Materials, Workload, WorkloadSpec
from provisioning.models import Allocation, Volume
from provisioning.services.placing import AllocationSpec
from provisioning.services.workloads import image_registries, mounted_volumes, os_images
from tenancy.models import SshKey, Tenant

WORKLOADS = Actor.system("workloads")


def _invalid(field: str, message: str) -> Invalid:
    return Invalid("validation_error", message, field=f"workload.{field}")


def workload_admit(*, tenant: Tenant, workload: Workload, spec: AllocationSpec) -> AllocationSpec:
    """Refuse a workload the rung cannot run or that names what the tenant does not have; the spec to place,
    narrowed to the region of the datasets it mounts."""
    try:
        workload_check(
            workload, rung=spec.rung, registries=image_registries(), os_images=os_images(), devices=spec.devices
        )
    except WorkloadInvalid as error:
        raise _invalid(error.field, error.message) from None
    if WorkloadSpec.of(spec.rung, workload).whole_hosts and spec.gpus != MAX_GPUS_PER_NODE:
        # slurmd runs as root with SYS_ADMIN (docs/jobs.md, "Pod Security"): its host is held whole, by one tenant.
        raise Invalid(
            "validation_error",
            f"A Slurm cluster's nodes are whole hosts: each member takes all {MAX_GPUS_PER_NODE} GPUs of its node "
            f"(gpus: {MAX_GPUS_PER_NODE}), because slurmd runs with host capabilities no other tenant may share.",
            field="gpus",
        )

    keys = set(SshKey.objects.filter(tenant=tenant, pk__in=workload.ssh_keys).values_list("pk", flat=True))
    for i, key_id in enumerate(workload.ssh_keys):
        if key_id not in keys:
            raise _invalid(f"ssh_keys.{i}", f"You have no SSH key {key_id} (GET /api/v1/ssh-keys lists them).")

    secrets = set(
        TenantSecret.objects.filter(tenant=tenant, name__in=workload.secret_names).values_list("name", flat=True)
    )
    for i, ref in enumerate(workload.secrets):
        if ref.name not in secrets:
            raise _invalid(f"secrets.{i}.name", f"You have no secret named {ref.name} (POST /api/v1/secrets).")
    if workload.pull_secret is not None:
        if rung_facts(spec.rung).attested:
            # The host pulls the image before the guest is attested: a registry credential would reach it first.
            raise _invalid(
                "pull_secret",
                "A confidential VM takes no registry credential: its image is pulled before attestation. Use a "
                "public image, or fetch private content inside the guest with a released secret.",
            )
        if workload.pull_secret not in secrets:
            raise _invalid("pull_secret", f"You have no secret named {workload.pull_secret}.")
        value = secret_values(tenant=tenant, names=[workload.pull_secret])[workload.pull_secret]
        if ":" not in value:
            raise _invalid("pull_secret", f'The secret {workload.pull_secret} is not "user:token" for the registry.')

    spec = replace(spec, regions=_dataset_region(tenant, workload, spec))
    return replace(spec, regions=_volume_region(tenant, workload, spec))


def _volume_region(tenant: Tenant, workload: Workload, spec: AllocationSpec) -> tuple[str, ...] | None:
    """Placement follows the data: the regions the allocation may run in, narrowed to where its volumes live. A
    volume the rung cannot take, or a block volume for several members, is refused here, before placement."""
    if not workload.volume_ids:
        return spec.regions
    facts = rung_facts(spec.rung, workload.framework)
    volumes = {
        v.pk: v for v in Volume.objects.filter(tenant=tenant, pk__in=workload.volume_ids).select_related("region")
    }
    regions: dict[str, str] = {}
    for i, entry in enumerate(workload.volumes):
        if entry.volume is None:
            continue
        volume = volumes.get(entry.volume)
        if volume is None:
            raise _invalid(
                f"volumes.{i}.volume", f"You have no volume {entry.volume} (GET /api/v1/volumes lists them)."
            )
        if volume.state not in MOUNTABLE:
            raise Conflict(
                "volume_state",
                f"Volume {volume.name} is {volume.state}: it cannot be mounted.",
                field="workload.volumes",
            )
        if VolumeKind(volume.kind) not in facts.volumes:
            raise _invalid(f"volumes.{i}.volume", facts.volumes_refused)
        if volume.kind == VolumeKind.BLOCK and spec.gang_size * max(1, spec.nodes) > 1:
            raise _invalid(
                f"volumes.{i}.volume",
                f"Block volume {volume.name} takes one attachment: an allocation of several members or hosts shares "
                "data through a filesystem volume.",
            )
        regions.setdefault(volume.region.code, volume.name)
        if spec.regions is not None and volume.region.code not in spec.regions:
            raise Conflict(
                "residency",
                f"Volume {volume.name} lives in {volume.region.code}, outside the regions this allocation may run in "
                f"({', '.join(spec.regions)}): an allocation runs where its data is.",
                field=f"workload.volumes.{i}.volume",
                extra={"volume": volume.pk, "region": volume.region.code},
            )
    if len(regions) > 1:
        named = ", ".join(f"{name} in {code}" for code, name in sorted(regions.items()))
        raise Conflict(
            "residency",
            f"The volumes live in different regions ({named}): an allocation runs in one region, where its data is.",
            field="workload.volumes",
        )
    return (next(iter(regions)),)


def _dataset_region(tenant: Tenant, workload: Workload, spec: AllocationSpec) -> tuple[str, ...] | None:
    """The regions the allocation may run in: the request's, narrowed to where its datasets live."""
    if not workload.datasets:
        return spec.regions
    assets = {
        a.pk: a for a in DataAsset.objects.filter(tenant=tenant, pk__in=workload.datasets).select_related("region")
    }
    indexes = {v.dataset: i for i, v in enumerate(workload.volumes) if v.dataset is not None}
    for asset_id, i in indexes.items():
        asset = assets.get(asset_id)
        if asset is None:
            raise _invalid(f"volumes.{i}.dataset", f"You have no data asset {asset_id}.")
        if asset.state != AssetState.LIVE:
            raise Conflict("asset_not_live", f"Data asset {asset_id} is {asset.state}: it cannot be mounted.")
        if not asset.location:
            raise _invalid(f"volumes.{i}.dataset", f"Data asset {asset_id} was registered without content.")
    regions = sorted({a.region.code for a in assets.values()})
    if len(regions) > 1:
        raise Conflict(
            "residency",
            f"The datasets live in {', '.join(regions)}: an allocation runs in one region, and data does not leave "
            "its region to reach it. Move them to one region first.",
            field="workload.volumes",
        )
    if spec.regions is not None and regions[0] not in spec.regions:
        raise Conflict(
            "residency",
            f"The datasets live in {regions[0]}, outside the regions asked for ({', '.join(spec.regions)}): data "
            "does not leave its region.",
            field="workload.volumes",
        )
    return (regions[0],)


def allocation_materials(allocation: Allocation, workload: Workload, *, released: bool = False) -> Materials:
    """What the workload names, resolved for rendering into the tenant's namespace.

    A confidential VM's secrets and dataset links are not rendered: the cluster (and whoever runs it) is outside
    the VM's trust boundary. They are resolved only ``released`` to the guest, once its attestation is verified
    (``provisioning.services.attestation.attestation_release``, the key broker)."""
    if rung_facts(allocation.rung).attested and not released:
        keys = SshKey.objects.filter(tenant=allocation.tenant, pk__in=workload.ssh_keys).order_by("pk")
        return Materials(ssh_keys=tuple(key.public_key for key in keys))
    tenant = allocation.tenant
    values = secret_values(tenant=tenant, names=workload.secret_names) if workload.secret_names else {}
    pull = None
    if workload.pull_secret and workload.image:
        user, _, token = values[workload.pull_secret].partition(":")
        pull = (image_parse(workload.image).registry, user, token)
    keys = SshKey.objects.filter(tenant=tenant, pk__in=workload.ssh_keys).order_by("pk")
    now = timezone.now()
    datasets = {
        asset.pk: asset_download_url(asset=asset, now=now)
        for asset in DataAsset.objects.filter(tenant=tenant, pk__in=workload.datasets)
    }
    boots_os = WorkloadSpec.of(allocation.rung, workload).boots_os
    os_image = os_images().get(workload.os_image or DEFAULT_OS_IMAGE) if boots_os else None
    ssh_keys = tuple(key.public_key for key in keys)
    if ssh_keys and settings.LADDER_SSH_GATEWAY_CA:
        # The hall's gateway logs in upstream with a certificate for the allocation's user, after it checked the
        # caller's own key: the workload trusts the gateways' CA for that principal only.
        principal = f"ldr-{allocation.pk}"
        ssh_keys += (f'cert-authority,principals="{principal}" {settings.LADDER_SSH_GATEWAY_CA.strip()}',)
    return Materials(
        secrets={ref.name: values[ref.name] for ref in workload.secrets},
        pull=pull,
        ssh_keys=ssh_keys,
        datasets=datasets,
        os_image=os_image,
        volumes=mounted_volumes(allocation, workload),
    )


def workload_output_keep(
    *, allocation: Allocation, logs: str, checkpoint: dict[str, object] | None, at: datetime
) -> list[DataAsset]:
    """Register what the workload wrote as the tenant's data, where retention lets the product keep it."""
    tenant = allocation.tenant
    workload = Workload.from_json(allocation.workload) if allocation.workload else Workload()
    region = allocation.hall.region.code
    live = DataAsset.objects.filter(tenant=tenant, pk__in=workload.datasets, state=AssetState.LIVE)
    sources = list(live.values_list("pk", flat=True))
    kept_assets = []
    if logs and kept(tenant, Category.JOB_LOG):
        kept_assets.append(
            data_asset_create(
                tenant=tenant,
                name=f"logs of {allocation.name} (allocation {allocation.pk})",
                category=Category.JOB_LOG,
                region=region,
                content=logs.encode(),
                derived_from=sources,
                actor=WORKLOADS,
                now=at,
            )
        )
    if checkpoint is not None and kept(tenant, Category.CHECKPOINT):
        kept_assets.append(
            data_asset_create(
                tenant=tenant,
                name=f"checkpoint of {allocation.name} (allocation {allocation.pk}) at {checkpoint['location']}",
                category=Category.CHECKPOINT,
                region=region,
                size_bytes=int(str(checkpoint["size_bytes"])),
                derived_from=sources,
                actor=WORKLOADS,
                now=at,
            )
        )
    return kept_assets


# --- the simulated fleet's endpoints ------------------------------------------------------------------------


def endpoint_call(
    *,
    allocation_id: int,
    api_key: str,
    request_body: bytes | None = None,
    path: str = "",
) -> dict[str, object] | None:
    """A call to a serverless endpoint of the simulated fleet, which Ladder serves itself: the gateway's check
    (``lifecycle.services.gateway.endpoint_admit``: an endpoint token or API key of its tenant, within its calls a
    minute, an idle one woken and the call held while it starts), then, with a request body, an answer in the
    shape a model server gives (its payloads kept when the tenant's capture policy asks)."""
    endpoint_admit(allocation_id=allocation_id, credential=api_key)
    now = timezone.now()
    endpoint_called(allocation_id, now)
    if request_body is None:
        return None
    allocation = Allocation.objects.select_related("tenant", "hall__region").get(pk=allocation_id)
    workload = Workload.from_json(allocation.workload) if allocation.workload else Workload()
    answer: dict[str, object] = {
        "endpoint": allocation.pk,
        "path": "/" + path,
        "model": workload.image or allocation.name,
        "received_bytes": len(request_body),
        "output": f"simulated answer from {allocation.name} ({len(request_body)} bytes in)",
        "at": now.isoformat(),
    }
    sources = DataAsset.objects.filter(tenant=allocation.tenant, pk__in=workload.datasets, state=AssetState.LIVE)
    inference_payload_capture(
        tenant=allocation.tenant,
        name=f"payload of {allocation.name} (allocation {allocation.pk}) at {now.isoformat()}",
        region=allocation.hall.region.code,
        request=request_body,
        response=json.dumps(answer).encode(),
        derived_from=list(sources.values_list("pk", flat=True)),
        now=now,
    )
    return answer
