"""The frame every staff console shares: which consoles exist, who may open each page, the navigation, where a
staff user lands after signing in, and the one-time token that makes a form sent twice act once.

A console is registered by its module (``register``): a name, a title, the permission that opens it and its pages,
each with the permission it needs (``tenancy.domain.roles.StaffPermission``, the registry the staff groups are granted
from and the API's staff views check). A page is for signed-in staff (``is_staff``) whose groups grant both; anyone
else gets a plain 403, tenant members included. What a page does beyond reading is named in
``staff_page(..., acting=...)``; what it draws for that asks ``tenancy.selectors.staff_may`` with the same name. A new
console is one more module that registers itself, and its templates; ``portal/consoles/urls.py`` adds its URLs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse

from core.actor import Actor
from tenancy.domain.roles import StaffPermission
from tenancy.selectors import staff_may
from tenancy.totp import staff_second_factor_passed, totp_device

View = Callable[..., HttpResponseBase]


@dataclass(frozen=True)
class Page:
    url_name: str  # in the ``portal`` namespace
    title: str
    permission: StaffPermission


@dataclass(frozen=True)
class Console:
    name: str
    title: str
    permission: StaffPermission  # opens the console at all
    pages: tuple[Page, ...] = field(default=())

    def opens_for(self, user: Any) -> bool:
        return staff_may(user, self.permission)

    def pages_for(self, user: Any) -> list[Page]:
        return [p for p in self.pages if staff_may(user, p.permission)]


CONSOLES: dict[str, Console] = {}


def register(console: Console) -> Console:
    if console.name in CONSOLES:
        raise ValueError(f"a console named {console.name!r} is registered already")
    CONSOLES[console.name] = console
    return console


def consoles_for(user: Any) -> list[Console]:
    """The consoles ``user`` may open, in the order they were registered."""
    return [c for c in CONSOLES.values() if c.opens_for(user)]


def landing(user: Any) -> str | None:
    """Where a staff user goes after signing in: the first page of the first console they may open (None: not
    staff, or staff without a console)."""
    for console in consoles_for(user):
        pages = console.pages_for(user)
        if pages:
            return reverse(f"portal:{pages[0].url_name}")
    return None


def staff_page(
    console: Console, permission: StaffPermission | None = None, *, acting: StaffPermission | None = None
) -> Callable[[View], View]:
    """A console page: signed in with the second factor (every staff user has one), staff, with the console's
    permission and ``permission`` (the page's own); a POST to it (acting, not only reading) also needs ``acting``,
    else a 403 page that names it."""

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            user = request.user
            if not console.opens_for(user):
                raise PermissionDenied(f"The {console.title} is for Ladder staff with that role.")
            if not staff_second_factor_passed(user):
                if totp_device(user) is None:
                    message = (
                        "Staff need a second factor: ask an administrator to run "
                        f"`manage.py staff_totp_enrol {user.get_username()}`, then sign in again with its code."
                    )
                    return forbidden(request, message)
                return redirect_to_login(request.get_full_path(), reverse("portal:login_code"))
            if permission is not None and not staff_may(user, permission):
                raise PermissionDenied(f"This needs the {permission.value} permission.")
            if acting is not None and request.method == "POST" and not staff_may(user, acting):
                return forbidden(request, f"This needs the {acting.value} permission.")
            request.console = console  # type: ignore[attr-defined]
            request.console_nav = [  # type: ignore[attr-defined]
                (c, c.pages_for(user)) for c in consoles_for(user)
            ]
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """The consoles' 403 page, saying what is missing."""
    return render(request, "consoles/forbidden.html", {"message": message}, status=403)


def actor(request: HttpRequest) -> Actor:
    """The signed-in staff user, as the services record them in the audit log."""
    return Actor.for_user(request.user)


# --- a form sent twice acts once --------------------------------------------------------------------------------

SESSION_KEY = "console_done"
TOKEN_FIELD = "once"  # noqa: S105 - a form field name, not a password


def new_token() -> str:
    return uuid.uuid4().hex


def _token(request: HttpRequest, prefix: str) -> str:
    return request.POST.get(f"{prefix}-{TOKEN_FIELD}" if prefix else TOKEN_FIELD, "")


def already_done(request: HttpRequest, *, prefix: str = "") -> str | None:
    """Where the first submission of this form went, when the form (its one-time token) was sent before."""
    token = _token(request, prefix)
    done: dict[str, str] = request.session.get(SESSION_KEY, {})
    return done.get(token) if token else None


def mark_done(request: HttpRequest, where: str, *, prefix: str = "") -> None:
    """Remember that this form acted, and where its answer is (the last 200 forms of the session)."""
    token = _token(request, prefix)
    if not token:
        return
    done: dict[str, str] = request.session.get(SESSION_KEY, {})
    done[token] = where
    request.session[SESSION_KEY] = dict(list(done.items())[-200:])
