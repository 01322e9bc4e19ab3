"""Signing in: the password step, the code step of a member with a second factor, the page where a member turns that
factor on and off, and what a locked-out sign-in sees.

Failed sign-ins are counted per username and address by django-axes (``AXES_*`` in config/settings.py); a locked
pair gets the sign-in page again saying so (``locked_out``), never a password check. A member with a confirmed TOTP
device is signed in after the password but not verified: the ``member`` decorator sends that session here, to the
code step, so no page of the portal opens before the code (nor does the API's session authentication).
"""

from __future__ import annotations

import math
from base64 import b32encode
from typing import Any

import qrcode
import qrcode.image.svg
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.actor import Actor
from core.errors import ServiceError
from portal.consoles.frame import landing
from portal.forms import CodeForm, error_onto
from portal.views import member
from tenancy.models import Membership
from tenancy.totp import second_factor_passed, totp_code_check, totp_device, totp_disable, totp_enable, totp_start


class SignIn(auth.LoginView):
    """Django's sign-in with the portal's template; a member with a second factor goes on to the code step. Staff
    land on their console, members on the portal."""

    template_name = "portal/login.html"

    def get_default_redirect_url(self) -> str:
        return landing(self.request.user) or super().get_default_redirect_url()

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_valid(form)
        if not second_factor_passed(self.request.user):
            return redirect_to_login(self.get_success_url(), reverse("portal:login_code"))
        return response


def locked_out(request: HttpRequest, response: HttpResponse | None = None, credentials: Any = None) -> HttpResponse:
    """django-axes' answer for a locked username and address: the sign-in page, saying so (429)."""
    minutes = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    form = AuthenticationForm(request)
    form.fields["username"].initial = (credentials or {}).get("username") or request.POST.get("username", "")
    context = {"form": form, "locked": True, "minutes": minutes, "next": request.POST.get("next", "")}
    return render(request, "portal/login.html", context, status=429)


def _next(request: HttpRequest) -> str:
    """Where to go after the code: the ``next`` this site gave, else the staff user's console or the portal."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return wanted
    return landing(request.user) or resolve_url(settings.LOGIN_REDIRECT_URL)


@login_required
def code(request: HttpRequest) -> HttpResponse:
    """The second step: a current code from the member's authenticator app."""
    if second_factor_passed(request.user):
        return redirect(_next(request))
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        device = totp_code_check(user=request.user, code=form.cleaned_data["code"])
        if device is not None:
            otp_login(request, device)
            return redirect(_next(request))
        form.add_error("code", "That code is not right (or came too soon after a wrong one): wait for the next code.")
    context = {"form": form, "next": _next(request)}
    return render(request, "portal/login_code.html", context, status=422 if form.errors else 200)


def _qr_svg(data: str) -> str:
    """``data`` as a QR code in SVG, drawn here (no image library, no script)."""
    image = qrcode.make(data, image_factory=qrcode.image.svg.SvgPathImage, box_size=8, border=2)
    svg: str = image.to_string(encoding="unicode")
    return svg


def _grouped(secret: str) -> str:
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


@member()
def security(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The member's second factor: start a TOTP device, confirm it with a code, turn it off with a code."""
    form = CodeForm(request.POST or None)
    if request.method == "POST":
        step = request.POST.get("form")
        try:
            if step == "start":
                totp_start(membership=membership)
                return redirect("portal:security")
            if step in ("enable", "disable") and form.is_valid():
                actor, code = Actor.for_user(request.user), form.cleaned_data["code"]
                if step == "enable":
                    device = totp_enable(membership=membership, code=code, actor=actor)
                    otp_login(request, device)  # this session gave its code
                    messages.success(request, "The second factor is on: signing in now asks for a code.")
                else:
                    totp_disable(membership=membership, code=code, actor=actor)
                    messages.success(request, "The second factor is off: signing in asks for the password only.")
                return redirect("portal:security")
        except ServiceError as error:
            error_onto(form, error)
    device = totp_device(request.user)
    pending = totp_device(request.user, confirmed=False) if device is None else None
    context: dict[str, Any] = {"device": device, "pending": pending, "form": form, "step": request.POST.get("form")}
    if pending is not None:
        context.update(_enrolment(pending))
    return render(request, "portal/security.html", context, status=422 if form.errors else 200)


def _enrolment(device: TOTPDevice) -> dict[str, Any]:
    secret = b32encode(device.bin_key).decode()
    uri = device.config_url
    return {"secret": secret, "secret_grouped": _grouped(secret), "uri": uri, "qr": mark_safe(_qr_svg(uri))}  # noqa: S308 - our own SVG
