"""Storage that outlives its allocations: ``ladder volumes`` (list, create, show, grow, delete, snapshots,
snapshot). A volume is named by its name or id; docs/volumes.md says what each refusal's code means."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.volumes import (
    volumes_create,
    volumes_destroy,
    volumes_list,
    volumes_partial_update,
    volumes_retrieve,
    volumes_snapshots_create,
    volumes_snapshots_list,
)
from ladder_sdk.models import PatchedVolumeChangeRequest, SnapshotCreateRequest, VolumeCreateRequest, VolumeKindEnum

from ladder_cli import output
from ladder_cli.choose import YES, confirm, one
from ladder_cli.commands.groups import group
from ladder_cli.commands.keys import when
from ladder_cli.session import answer, client, every

GONE = frozenset({"deleting", "deleted"})
NAME_MAX = 63  # a volume's or snapshot's name is a DNS label
VOLUME = typer.Argument(..., metavar="VOLUME", help="The volume's name or id.")
KIND = typer.Option(VolumeKindEnum.FILESYSTEM, "--kind", help="filesystem (shared by many) or block (one VM's disk).")


def volume(api: AuthenticatedClient, typed: str) -> Any:
    """The volume named ``typed`` (or with that id); a live one before one being deleted of the same name."""
    if typed.isdigit():
        return answer(volumes_retrieve.sync_detailed, api, id=int(typed))
    return one(
        every(volumes_list.sync_detailed, api),
        typed,
        "volume",
        "ladder volumes lists yours",
        keys=lambda item: (item.name,),
        gone=lambda item: str(item.state) in GONE,
    )


def _size(gb: int | None) -> str:
    return "" if gb is None else f"{gb} GB"


def volumes_list_command(as_json: bool) -> None:
    rows = list(every(volumes_list.sync_detailed, client()))
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("ID", "NAME", "REGION", "KIND", "SIZE", "USED", "STATE", "MOUNTED BY", "SNAPSHOTS", "CREATED"),
        (
            (
                v.id,
                v.name,
                v.region,
                v.kind,
                _size(v.size_gb),
                _size(v.used_gb),
                v.state,
                ", ".join(map(str, v.attached_to)) or "-",
                v.snapshots,
                when(v.created_at),
            )
            for v in rows
        ),
        empty="No volumes: create one with `ladder volumes create NAME --size GB --region REGION`.",
    )


volumes_app = group(
    "List, create, grow, snapshot and delete volumes: storage that outlives the work that mounts it.\n\n"
    "A volume lives in one region (inside your residency), is a shared `filesystem` or a one-VM `block` disk, "
    "is billed per provisioned GB-hour and never shrinks. `ladder volumes` alone lists them.\n\n"
    "Example: ladder volumes create datasets --size 500 --region eu-west",
    volumes_list_command,
)


@volumes_app.command("list")
def volumes_list_cli(as_json: bool = output.JSON) -> None:
    """List your volumes: region, kind, size, GB in use, state, the allocations that mount each, its snapshots.

    Example: ladder volumes list --json
    """
    volumes_list_command(as_json)


def _show(found: Any) -> None:
    output.fields(
        [
            ("Name", found.name),
            ("Id", found.id),
            ("Region", found.region),
            ("Kind", f"{found.kind} ({found.access_mode})"),
            ("Size", _size(found.size_gb)),
            ("Used", _size(found.used_gb)),
            ("State", found.state),
            ("Mounted by", ", ".join(f"allocation {a}" for a in found.attached_to) or "-"),
            ("Snapshots", found.snapshots),
            ("Restored from", found.restored_from if found.restored_from is not None else "-"),
            ("Data key", found.key_id or "destroyed"),
            ("Created", when(found.created_at)),
            ("State since", when(found.state_changed_at)),
        ]
    )


@volumes_app.command("create")
def volumes_create_cli(
    name: str = typer.Argument(
        ..., metavar="NAME", help="A DNS label: lower-case letters, digits and hyphens, up to 63."
    ),
    size: int = typer.Option(..., "--size", min=1, metavar="GB", help="Size in GB (GiB), 1 to 100000."),
    region: str = typer.Option(
        ..., "--region", metavar="REGION", help="The region; your residency must allow storing data there."
    ),
    kind: VolumeKindEnum = KIND,
    as_json: bool = output.JSON,
) -> None:
    """Create a volume; it is `creating` until the storage has it, then `available`.

    Refused with a code: residency (the region is outside your residency), quota, not_priced, name_taken,
    budget_exceeded (a hard-stop budget is used up).

    Example: ladder volumes create scratch --size 200 --region eu-west --kind block
    """
    body = VolumeCreateRequest(name=name, region=region, kind=kind, size_gb=size)
    created = answer(volumes_create.sync_detailed, client(), body=body)
    if as_json:
        output.emit_json(created)
        return
    output.err.print(
        f"Volume {created.name} (id {created.id}) created: {created.size_gb} GB {created.kind} in "
        f"{created.region}, {created.state}.",
        highlight=False,
    )


@volumes_app.command("show")
def volumes_show(
    name: str = VOLUME,
    as_json: bool = output.JSON,
) -> None:
    """Show a volume: region, kind, size and use, state, what mounts it, its snapshots and its data key.

    Example: ladder volumes show datasets
    """
    found = volume(client(), name)
    if as_json:
        output.emit_json(found)
        return
    _show(found)


@volumes_app.command("grow")
def volumes_grow(
    name: str = VOLUME,
    size: int = typer.Option(
        ..., "--size", metavar="GB", help="The new size in GB: larger than today's (a volume never shrinks)."
    ),
    as_json: bool = output.JSON,
) -> None:
    """Grow a volume to a larger size (billed at the new size from now on).

    A smaller size is refused (validation_error): a volume never shrinks. So is growth past the quota or under a
    used-up hard-stop budget.

    Example: ladder volumes grow datasets --size 800
    """
    api = client()
    found = volume(api, name)
    body = PatchedVolumeChangeRequest(size_gb=size)
    grown = answer(volumes_partial_update.sync_detailed, api, id=found.id, body=body)
    if as_json:
        output.emit_json(grown)
        return
    output.err.print(f"Volume {grown.name} grown from {found.size_gb} GB to {grown.size_gb} GB.", highlight=False)


@volumes_app.command("delete")
def volumes_delete(name: str = VOLUME, yes: bool = YES) -> None:
    """Delete a volume and its snapshots: billing stops at once, and its data key is destroyed (and with it the
    data) after the waiting period.

    Refused while an allocation mounts it (volume_in_use) or a legal hold preserves it (legal_hold).

    Example: ladder volumes delete scratch --yes
    """
    api = client()
    found = volume(api, name)
    snapshots = f" and its {found.snapshots} snapshot{'s' * (found.snapshots != 1)}" if found.snapshots else ""
    confirm(f"delete volume {found.name} (id {found.id}, {found.size_gb} GB in {found.region}){snapshots}", yes)
    gone = answer(volumes_destroy.sync_detailed, api, id=found.id)
    output.err.print(f"Volume {gone.name} (id {gone.id}) is {gone.state}: no longer billed.", highlight=False)


@volumes_app.command("snapshots")
def volumes_snapshots(name: str = VOLUME, as_json: bool = output.JSON) -> None:
    """List a volume's snapshots, newest first: name, size and state.

    Example: ladder volumes snapshots datasets
    """
    api = client()
    found = volume(api, name)
    rows = answer(volumes_snapshots_list.sync_detailed, api, id=found.id)
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("ID", "NAME", "SIZE", "STATE", "CREATED"),
        ((s.id, s.name, _size(s.size_gb), s.state, when(s.created_at)) for s in rows),
        empty=f"Volume {found.name} has no snapshots: take one with `ladder volumes snapshot {found.name}`.",
    )


def snapshot_name(volume_name: str, now: datetime) -> str:
    """A default snapshot name: the volume's name and the time, kept a DNS label."""
    stamp = f"{now.astimezone(UTC):%Y%m%d-%H%M%S}"
    stem = re.sub(r"-+$", "", volume_name[: NAME_MAX - len(stamp) - 1])
    return f"{stem}-{stamp}" if stem else f"snapshot-{stamp}"


@volumes_app.command("snapshot")
def volumes_snapshot(
    name: str = VOLUME,
    snapshot: str = typer.Option(
        None, "--name", metavar="NAME", help="The snapshot's name (default: the volume's and the time)."
    ),
    as_json: bool = output.JSON,
) -> None:
    """Take a snapshot of a volume: `creating` until the storage has it, then `ready` (billed per GB-hour).

    A ready snapshot restores into a new volume of the same region and kind.

    Example: ladder volumes snapshot datasets --name before-cleanup
    """
    api = client()
    found = volume(api, name)
    body = SnapshotCreateRequest(name=snapshot or snapshot_name(found.name, datetime.now(UTC)))
    taken = answer(volumes_snapshots_create.sync_detailed, api, id=found.id, body=body)
    if as_json:
        output.emit_json(taken)
        return
    output.err.print(
        f"Snapshot {taken.name} (id {taken.id}) of volume {found.name} taken: {taken.size_gb} GB, {taken.state}.",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(volumes_app, name="volumes")
