"""The portal's forms: what a person types, checked for shape only. The rules are the services' (the same as the
API's): a form turns its fields into the services' arguments, and a ``ServiceError`` comes back onto the field it
names."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib.auth import password_validation

from compliance.services.secrets import MAX_VALUE_BYTES
from core.errors import ServiceError
from provisioning.domain.capacity_classes import CapacityClass, OnPreemption
from provisioning.domain.node_host import MAX_CPU_CORES, MAX_MEMORY_GIB
from provisioning.domain.rungs import DEFAULT_FRAMEWORK, SOFT_SHARING, Framework
from provisioning.domain.volumes import MAX_GB, MIN_GB, NAME_MAX, VolumeKind
from provisioning.domain.workloads import CHECKPOINTS, Checkpoint, Port, SecretRef, Volume, Workload
from provisioning.services.placing import AllocationSpec
from tenancy.domain.roles import TenantRole


class SignupForm(forms.Form):
    organisation = forms.CharField(max_length=200, label="Organisation name")
    email = forms.EmailField(label="E-mail address")
    password = forms.CharField(widget=forms.PasswordInput, strip=False, label="Password")

    def clean_password(self) -> str:
        password: str = self.cleaned_data["password"]
        password_validation.validate_password(password)
        return password


def error_onto(form: forms.Form, error: ServiceError, fields: dict[str, str] | None = None) -> None:
    """Show a service's refusal on the form field it names (``workload.image`` -> ``image``), else on the form."""
    named = error.field or ""
    target = (fields or {}).get(named) or (named.split(".")[-1] if named.split(".")[-1] in form.fields else None)
    if target is None and named.startswith("workload."):
        first = named.removeprefix("workload.").split(".")[0]
        target = first if first in form.fields else None
    form.add_error(target, error.detail)


SHARE_MODES = sorted(m.value for m in SOFT_SHARING)
EXPOSE = [("none", "inside the allocation only"), ("tenant", "to my other allocations"), ("public", "public HTTPS")]


@dataclass(frozen=True)
class VolumeChoice:
    """A volume of the tenant the launch form offers to mount."""

    id: int
    name: str
    label: str  # what its checkbox says: name, kind, size, region (and who holds a block volume)


class LaunchForm(forms.Form):
    """One form for every rung; the template shows the fields the rung takes. The volumes it may mount (``volumes``:
    the tenant's, of the kinds the rung takes) each come with a mount path and, unless the rung mounts everything
    read-only (``read_only``), a read-only box; the template draws them together, as one row a volume."""

    idempotency = forms.CharField(widget=forms.HiddenInput)
    rung = forms.CharField(widget=forms.HiddenInput)
    name = forms.CharField(max_length=100)
    gpu_model = forms.ChoiceField(label="GPU model")
    region = forms.ChoiceField(required=False, label="Region")
    gpus = forms.IntegerField(min_value=1, max_value=8, required=False, label="Whole GPUs")
    mig_profile = forms.ChoiceField(required=False, label="MIG slice")
    share_mode = forms.ChoiceField(choices=[("", "—"), *((m, m) for m in SHARE_MODES)], required=False, label="Sharing")
    share = forms.DecimalField(
        min_value=0.001, max_value=0.999, decimal_places=3, required=False, label="Share of one GPU"
    )
    nodes = forms.IntegerField(min_value=1, max_value=64, required=False, label="Nodes")
    capacity_class = forms.ChoiceField(
        initial=CapacityClass.ON_DEMAND.value,
        required=False,
        label="Capacity (spot is cheaper, and may be preempted with notice)",
    )
    reservation = forms.ChoiceField(required=False, label="Reservation (for reserved capacity)")
    on_preemption = forms.ChoiceField(
        choices=[
            (OnPreemption.STOP.value, "stop"),
            (OnPreemption.REQUEUE.value, "requeue: placed again from its checkpoint when room returns"),
        ],
        initial=OnPreemption.STOP.value,
        required=False,
        label="When spot work is preempted",
    )
    gang_size = forms.IntegerField(min_value=2, max_value=512, required=False, label="Gang members")
    cpu = forms.IntegerField(
        min_value=1, max_value=MAX_CPU_CORES, required=False, label="vCPUs per member (empty: the bundle, 8 per GPU)"
    )
    memory_gib = forms.IntegerField(
        min_value=1, max_value=MAX_MEMORY_GIB, required=False, label="Memory per member, GiB (empty: the bundle)"
    )
    framework = forms.ChoiceField(
        choices=[(f.value, f.value) for f in Framework],
        required=False,
        label="Framework (jobs: torchrun, an MPI launcher, a Ray job, or a Slurm cluster you reach over SSH)",
    )
    image = forms.CharField(max_length=512, required=False, label="Container image")
    command = forms.CharField(max_length=4096, required=False, label="Command")
    env = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Environment (NAME=value per line)"
    )
    secrets = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Secrets as variables"
    )
    secret_files = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Secrets as files (/var/run/secrets/ladder/NAME)"
    )
    pull_secret = forms.ChoiceField(required=False, label="Registry credentials (a secret holding user:token)")
    dataset = forms.ChoiceField(required=False, label="Dataset to mount read-only")
    dataset_path = forms.CharField(max_length=256, required=False, initial="/data", label="Dataset mount path")
    scratch_gb = forms.IntegerField(min_value=1, max_value=4096, required=False, label="Scratch space (GB)")
    scratch_path = forms.CharField(max_length=256, required=False, initial="/scratch", label="Scratch mount path")
    checkpoint_path = forms.CharField(max_length=256, required=False, label="Checkpoint path")
    checkpoint_interval = forms.IntegerField(
        min_value=30, max_value=86_400, required=False, label="Checkpoint every (seconds)"
    )
    port = forms.IntegerField(min_value=1, max_value=65535, required=False, label="Port")
    expose = forms.ChoiceField(choices=EXPOSE, required=False, label="Expose the port")
    ssh_keys = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="SSH keys")
    os_image = forms.ChoiceField(required=False, label="Operating system")
    cloud_init = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False, label="cloud-init user data")

    volumes = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Volumes to mount")

    def __init__(
        self,
        *args: Any,
        choices: dict[str, list[tuple[str, str]]],
        volumes: Sequence[VolumeChoice] = (),
        read_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        for name, options in choices.items():
            field = self.fields[name]
            if isinstance(field, forms.ChoiceField):
                field.choices = options
        self.mountable = list(volumes)
        self.read_only = read_only
        self.fields["volumes"].choices = [(str(v.id), v.label) for v in self.mountable]  # type: ignore[attr-defined]
        for v in self.mountable:
            self.fields[f"volume_path_{v.id}"] = forms.CharField(
                max_length=256, required=False, initial=f"/mnt/{v.name}", label=f"Mount path of {v.name}"
            )
            if not read_only:
                self.fields[f"volume_read_only_{v.id}"] = forms.BooleanField(
                    required=False, label=f"Mount {v.name} read-only"
                )

    def _volume_field(self, name: str) -> bool:
        return name == "volumes" or name.startswith(("volume_path_", "volume_read_only_"))

    def visible_fields(self) -> list[forms.BoundField]:
        """The fields ``_form.html`` lays out one by one: all but the volumes' (``volume_rows`` draws those)."""
        return [f for f in super().visible_fields() if not self._volume_field(f.name)]

    def volume_rows(self) -> list[dict[str, Any]]:
        """One row a volume offered: its checkbox, its mount path and its read-only box (None where forced)."""
        boxes = {str(box.data["value"]): box for box in self["volumes"]}
        return [
            {
                "volume": v,
                "box": boxes[str(v.id)],
                "path": self[f"volume_path_{v.id}"],
                "read_only": None if self.read_only else self[f"volume_read_only_{v.id}"],
            }
            for v in self.mountable
        ]

    def clean_env(self) -> list[tuple[str, str]]:
        pairs = []
        for number, line in enumerate(self.cleaned_data["env"].splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise forms.ValidationError(f"Line {number} is not NAME=value.")
            pairs.append((name.strip(), value))
        return pairs

    def clean_command(self) -> list[str]:
        try:
            return shlex.split(self.cleaned_data["command"])
        except ValueError as error:
            raise forms.ValidationError(f"The command does not parse as a shell line: {error}.") from None

    def spec(self) -> AllocationSpec:
        data = self.cleaned_data
        share = data.get("share")
        gang = data.get("gang_size") or 1
        return AllocationSpec(
            rung=data["rung"],
            gpu_models=(data["gpu_model"],),
            gpus=data.get("gpus") or 0,
            mig_profile=data.get("mig_profile") or None,
            share_mode=data.get("share_mode") or None,
            share_milli=int(share * 1000) if share else None,
            nodes=data.get("nodes") or 0,
            gang_size=gang,
            topology="nvlink" if gang > 1 else None,
            regions=(data["region"],) if data.get("region") else None,
            capacity_class=data.get("capacity_class") or CapacityClass.ON_DEMAND.value,
            reservation=int(data["reservation"]) if data.get("reservation") else None,
            on_preemption=data.get("on_preemption") or OnPreemption.STOP.value,
            cpu_milli=(data.get("cpu") or 0) * 1000,
            memory_mib=(data.get("memory_gib") or 0) * 1024,
        )

    def workload(self) -> Workload | None:
        data = self.cleaned_data
        fields = (
            "image", "command", "env", "secrets", "secret_files", "pull_secret", "dataset", "scratch_gb",
            "checkpoint_path", "port", "ssh_keys", "os_image", "cloud_init", "volumes",
        )  # fmt: skip
        framework = data["framework"] or DEFAULT_FRAMEWORK.value
        if not any(data.get(f) for f in fields) and framework == DEFAULT_FRAMEWORK:
            return None
        ports = (Port(data["port"], "http", data.get("expose") or "none"),) if data.get("port") else ()
        volumes = [entry for entry, _ in self._mounts()]
        checkpoint = None
        if data.get("checkpoint_path") or data.get("checkpoint_interval"):
            checkpoint = Checkpoint(
                path=data.get("checkpoint_path") or CHECKPOINTS, interval_s=data.get("checkpoint_interval") or 600
            )
        secrets = [SecretRef(name) for name in data.get("secrets") or ()]
        secrets += [SecretRef(name, "file") for name in data.get("secret_files") or ()]
        return Workload(
            image=data.get("image") or None,
            command=tuple(data.get("command") or ()),
            env=tuple(data.get("env") or ()),
            secrets=tuple(secrets),
            ports=ports,
            volumes=tuple(volumes),
            checkpoint=checkpoint,
            os_image=data.get("os_image") or None,
            cloud_init=data.get("cloud_init") or None,
            ssh_keys=tuple(int(k) for k in data.get("ssh_keys") or ()),
            pull_secret=data.get("pull_secret") or None,
            framework=framework,
        )

    def _mounts(self) -> list[tuple[Volume, dict[str, str]]]:
        """The workload's ``volumes`` entries in order, each with the form field that says each of its parts (the
        service names a refusal by the entry's index: ``workload.volumes.2.mount_path``)."""
        data = self.cleaned_data
        mounts: list[tuple[Volume, dict[str, str]]] = []
        if data.get("dataset"):
            dataset = Volume(data.get("dataset_path") or "/data", dataset=int(data["dataset"]))
            mounts.append((dataset, {"dataset": "dataset", "mount_path": "dataset_path"}))
        if data.get("scratch_gb"):
            scratch = Volume(data.get("scratch_path") or "/scratch", scratch_gb=data["scratch_gb"])
            mounts.append((scratch, {"scratch_gb": "scratch_gb", "mount_path": "scratch_path"}))
        names = {str(v.id): v.name for v in self.mountable}
        for chosen in data.get("volumes") or ():
            path = data.get(f"volume_path_{chosen}") or f"/mnt/{names[chosen]}"
            read_only = self.read_only or bool(data.get(f"volume_read_only_{chosen}"))
            parts = {"volume": "volumes", "mount_path": f"volume_path_{chosen}", "read_only": "volumes"}
            mounts.append((Volume(path, volume=int(chosen), read_only=read_only), parts))
        return mounts

    def error_fields(self) -> dict[str, str]:
        """Where each field a service may name in a refusal of the workload's volumes is shown on this form."""
        found = {"workload.volumes": "volumes"} if self.cleaned_data.get("volumes") else {}
        for i, (_, parts) in enumerate(self._mounts()):
            found[f"workload.volumes.{i}"] = next(iter(parts.values()))
            found.update({f"workload.volumes.{i}.{part}": field for part, field in parts.items()})
        return found


class VolumeCreateForm(forms.Form):
    name = forms.CharField(
        max_length=200, label="Name", help_text=f"Lower-case letters, digits and hyphens; 1 to {NAME_MAX} characters."
    )
    region = forms.ChoiceField(label="Region")
    kind = forms.ChoiceField(label="Kind")
    size_gb = forms.IntegerField(min_value=MIN_GB, max_value=MAX_GB, label="Size (GB)")

    def __init__(self, *args: Any, regions: list[str], kinds: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["region"].choices = [(r, r) for r in regions]  # type: ignore[attr-defined]
        self.fields["kind"].choices = [(k.value, kinds[k]) for k in VolumeKind]  # type: ignore[attr-defined]


class VolumeGrowForm(forms.Form):
    size_gb = forms.IntegerField(min_value=MIN_GB, max_value=MAX_GB, label="New size (GB)", help_text="Larger only.")


class SnapshotForm(forms.Form):
    name = forms.CharField(max_length=200, label="Snapshot name", help_text="Lower-case letters, digits and hyphens.")


class VolumeRenameForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        label="New name",
        help_text=f"Lower-case letters, digits and hyphens; 1 to {NAME_MAX} characters.",
    )


class VolumeRestoreForm(forms.Form):
    """A new volume from a snapshot: its region and kind are the snapshot's; the service judges the size (at least
    the snapshot's) so the refusal reads as the API's."""

    name = forms.CharField(
        max_length=200, label="New volume's name", help_text="Lower-case letters, digits and hyphens."
    )
    size_gb = forms.IntegerField(
        min_value=MIN_GB, max_value=MAX_GB, label="Size (GB)", help_text="At least the snapshot's size."
    )


class InviteForm(forms.Form):
    email = forms.EmailField(label="E-mail address")
    role = forms.ChoiceField(choices=[(r, r) for r in ("admin", "member", "viewer", "billing", "owner")])


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[(r.value, r.value) for r in TenantRole])


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100)
    write = forms.BooleanField(required=False, label="May change things (write scope)")


class SshKeyForm(forms.Form):
    name = forms.CharField(max_length=100, label="Key name")
    public_key = forms.CharField(
        max_length=16_384, widget=forms.Textarea(attrs={"rows": 2}), label="Public key (one line of ~/.ssh/id_*.pub)"
    )


class SecretValueForm(forms.Form):
    """A secret's value: typed in a password field, never rendered back (not even after an error)."""

    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        strip=False,
        max_length=MAX_VALUE_BYTES,
        label="Value",
    )


class SecretForm(SecretValueForm):
    name = forms.CharField(max_length=100, label="Secret name", help_text="Letters, digits and underscores.")
    field_order = ("name", "value")


class BudgetForm(forms.Form):
    monthly = forms.DecimalField(
        max_digits=14, decimal_places=2, required=False, label="Monthly budget", help_text="Empty: no budget."
    )
    hard_stop = forms.BooleanField(
        required=False, label="Hard stop at 100% (refuse new work, stop what runs; jobs at their next checkpoint)"
    )


class ErasureForm(forms.Form):
    category = forms.ChoiceField(label="Category to erase")
    confirm = forms.BooleanField(label="I understand this cannot be undone, except what a legal hold preserves")

    def __init__(self, *args: Any, categories: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [(c, c) for c in categories]  # type: ignore[attr-defined]


class RetentionForm(forms.Form):
    category = forms.CharField(widget=forms.HiddenInput)
    days = forms.IntegerField(min_value=0, required=False)
    zero_retention = forms.BooleanField(required=False)


class LeaveForm(forms.Form):
    confirm = forms.CharField(label="Type your organisation's slug to confirm")

    def __init__(self, *args: Any, slug: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slug = slug

    def clean_confirm(self) -> str:
        typed: str = self.cleaned_data["confirm"].strip()
        if typed != self.slug:
            raise forms.ValidationError(f"Type {self.slug} exactly to close the account.")
        return typed


class CodeForm(forms.Form):
    """A current code from the member's authenticator app."""

    code = forms.CharField(
        max_length=10,
        label="Code from your authenticator app",
        widget=forms.TextInput(attrs={"inputmode": "numeric", "autocomplete": "one-time-code", "pattern": "[0-9 ]*"}),
    )
