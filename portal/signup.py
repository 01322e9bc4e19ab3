"""Joining through the portal: sign up, confirm the e-mail address, and the mails that carry the links.

Sign-in, sign-out and password reset are Django's own views with the portal's templates (``portal/urls.py``). A
confirmation link is the user's id signed with ``SECRET_KEY`` and a time, valid for ``CONFIRM_DAYS``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from core.actor import Actor
from core.errors import ServiceError
from lifecycle.services.customers import customer_confirm, customer_signup
from portal.forms import SignupForm, error_onto

User = get_user_model()
CONFIRM_SALT = "portal.confirm"
CONFIRM_DAYS = 3


def _link(request: HttpRequest, path: str) -> str:
    return request.build_absolute_uri(path)


def confirmation_send(request: HttpRequest, user: Any) -> None:
    token = signing.dumps(user.pk, salt=CONFIRM_SALT)
    context = {"user": user, "link": _link(request, reverse("portal:confirm", args=[token])), "days": CONFIRM_DAYS}
    send_mail(
        "Confirm your Ladder account",
        render_to_string("portal/email/confirm.txt", context),
        settings.DEFAULT_FROM_EMAIL,
        [user.email],
    )


def invitation_send(request: HttpRequest, user: Any, tenant_name: str, inviter: str) -> None:
    """An invited member sets a password through the password-reset confirmation page."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("portal:password_reset_confirm", args=[uid, default_token_generator.make_token(user)])
    context = {"tenant": tenant_name, "inviter": inviter, "link": _link(request, path), "username": user.username}
    send_mail(
        f"You are invited to {tenant_name} on Ladder",
        render_to_string("portal/email/invite.txt", context),
        settings.DEFAULT_FROM_EMAIL,
        [user.email],
    )


def signup(request: HttpRequest) -> HttpResponse:
    """Organisation, e-mail and password: a tenant, its owner and its billing account; the owner confirms the
    address before signing in."""
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            tenant = customer_signup(
                organisation=form.cleaned_data["organisation"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
                actor=Actor.system("signup"),
            )
        except ServiceError as error:
            error_onto(form, error, {"username": "email", "slug": "organisation"})
        else:
            owner = tenant.memberships.select_related("user").get().user
            confirmation_send(request, owner)
            return render(request, "portal/signup_sent.html", {"email": owner.email})
    return render(request, "portal/signup.html", {"form": form}, status=422 if form.errors else 200)


def confirm(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user_id = signing.loads(token, salt=CONFIRM_SALT, max_age=CONFIRM_DAYS * 86400)
    except signing.BadSignature:
        return render(request, "portal/confirm_failed.html", status=400)
    user = User.objects.filter(pk=user_id).select_related("membership__tenant").first()
    if user is None:
        return render(request, "portal/confirm_failed.html", status=400)
    if customer_confirm(user=user, actor=Actor.system("signup")):
        user.refresh_from_db()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Your address is confirmed. Welcome to Ladder.")
        return redirect("portal:home")
    messages.info(request, "This address was confirmed already: sign in.")
    return redirect("portal:login")
