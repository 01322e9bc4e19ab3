"""The portal's forms: what a person types, checked for shape only. The rules are the services' (the same as the
API's): a form turns its fields into the services' arguments, and a ``ServiceError`` comes back onto the field it
names."""

from __future__ import annotations

import shlex
from typing import Any

from django import forms
from django.contrib.auth import password_validation

from compliance.services.secrets import MAX_VALUE_BYTES
from core.errors import ServiceError
from provisioning.domain.rungs import DEFAULT_FRAMEWORK, SOFT_SHARING, Framework
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


class LaunchForm(forms.Form):
    """One form for every rung; the template shows the fields the rung takes."""

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
    gang_size = forms.IntegerField(min_value=2, max_value=512, required=False, label="Gang members")
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

    def __init__(self, *args: Any, choices: dict[str, list[tuple[str, str]]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, options in choices.items():
            field = self.fields[name]
            if isinstance(field, forms.ChoiceField):
                field.choices = options

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
        )

    def workload(self) -> Workload | None:
        data = self.cleaned_data
        fields = (
            "image", "command", "env", "secrets", "secret_files", "pull_secret", "dataset", "scratch_gb",
            "checkpoint_path", "port", "ssh_keys", "os_image", "cloud_init",
        )  # fmt: skip
        framework = data["framework"] or DEFAULT_FRAMEWORK.value
        if not any(data.get(f) for f in fields) and framework == DEFAULT_FRAMEWORK:
            return None
        ports = (Port(data["port"], "http", data.get("expose") or "none"),) if data.get("port") else ()
        volumes = []
        if data.get("dataset"):
            volumes.append(Volume(data.get("dataset_path") or "/data", dataset=int(data["dataset"])))
        if data.get("scratch_gb"):
            volumes.append(Volume(data.get("scratch_path") or "/scratch", scratch_gb=data["scratch_gb"]))
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
