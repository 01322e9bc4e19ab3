"""The access page (``/portal/access``): the tenant's SSH public keys (by fingerprint) and its secrets (name,
version and times: a value goes in and is never shown again, not even in a form sent back with an error).

Every write goes through the services the API's ``/ssh-keys`` and ``/secrets`` use, so the same rules refuse it
in the same words and the same audit events are left."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from compliance.models import TenantSecret
from compliance.services.secrets import secret_create, secret_delete, secret_update
from core.actor import Actor
from core.errors import ServiceError
from portal.forms import SecretForm, SecretValueForm, SshKeyForm, error_onto
from portal.views import member
from tenancy.domain.roles import Action, role_allows
from tenancy.models import Membership, SshKey
from tenancy.services import ssh_key_add, ssh_key_remove


def _may(membership: Membership, action: Action) -> None:
    if not role_allows(membership.role, action):
        raise PermissionDenied(f"A {membership.role} may not do this.")


def _secrets(membership: Membership) -> Any:
    return TenantSecret.objects.filter(tenant=membership.tenant).order_by("name")


@member(Action.SSH_KEY_VIEW)
def access(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant = membership.tenant
    sent = request.POST.get("form") if request.method == "POST" else None
    key_form = SshKeyForm(request.POST if sent == "ssh_key" else None, auto_id="ssh_key_%s")
    secret_form = SecretForm(request.POST if sent == "secret" else None, auto_id="secret_%s")
    if sent == "ssh_key" and key_form.is_valid():
        _may(membership, Action.SSH_KEY_MANAGE)
        try:
            key = ssh_key_add(tenant=tenant, actor=Actor.for_user(request.user), **key_form.cleaned_data)
        except ServiceError as error:
            error_onto(key_form, error)
        else:
            messages.success(request, f"The key {key.name} ({key.fingerprint}) is added.")
            return redirect("portal:access")
    if sent == "secret" and secret_form.is_valid():
        _may(membership, Action.SECRET_MANAGE)
        try:
            secret = secret_create(tenant=tenant, actor=Actor.for_user(request.user), **secret_form.cleaned_data)
        except ServiceError as error:
            error_onto(secret_form, error)
        else:
            messages.success(request, f"The secret {secret.name} is stored (version {secret.version}).")
            return redirect("portal:access")
    context = {
        "ssh_keys": SshKey.objects.filter(tenant=tenant).order_by("name"),
        "secrets": _secrets(membership),
        "key_form": key_form,
        "secret_form": secret_form,
        "may_keys": role_allows(membership.role, Action.SSH_KEY_MANAGE),
        "may_secrets": role_allows(membership.role, Action.SECRET_MANAGE),
    }
    failed = key_form.errors or secret_form.errors
    return render(request, "portal/access.html", context, status=422 if failed else 200)


@require_POST
@member(Action.SSH_KEY_MANAGE)
def ssh_key_remove_view(request: HttpRequest, membership: Membership, key_id: int) -> HttpResponse:
    key = get_object_or_404(SshKey.objects.filter(tenant=membership.tenant), pk=key_id)
    try:
        ssh_key_remove(key=key, actor=Actor.for_user(request.user))
    except ServiceError as error:
        messages.error(request, f"The key {key.name} was not removed: {error.detail}")
    else:
        messages.success(request, f"The key {key.name} is removed; new work cannot name it.")
    return redirect("portal:access")


@member(Action.SECRET_MANAGE)
def secret_value_view(request: HttpRequest, membership: Membership, name: str) -> HttpResponse:
    """Give a secret a new value: its next version."""
    secret = get_object_or_404(_secrets(membership), name=name)
    form = SecretValueForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            secret = secret_update(secret=secret, value=form.cleaned_data["value"], actor=Actor.for_user(request.user))
        except ServiceError as error:
            error_onto(form, error)
        else:
            messages.success(request, f"The secret {secret.name} has a new value (version {secret.version}).")
            return redirect("portal:access")
    context = {"secret": secret, "form": form}
    return render(request, "portal/secret_value.html", context, status=422 if form.errors else 200)


@member(Action.SECRET_MANAGE)
def secret_delete_view(request: HttpRequest, membership: Membership, name: str) -> HttpResponse:
    """Delete a secret after a confirmation; refused while a live allocation's workload names it."""
    secret = get_object_or_404(_secrets(membership), name=name)
    refusal, status = None, 200
    if request.method == "POST":
        try:
            secret_delete(secret=secret, actor=Actor.for_user(request.user))
        except ServiceError as error:
            refusal, status = error.detail, error.status
        else:
            messages.success(request, f"The secret {secret.name} is deleted; its value is gone for good.")
            return redirect("portal:access")
    context = {"secret": secret, "refusal": refusal}
    return render(request, "portal/secret_delete.html", context, status=status)
