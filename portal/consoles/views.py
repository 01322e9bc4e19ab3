"""``/console/``: a staff user's own console; anyone else, a plain 403."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from portal.consoles.frame import landing


@login_required
def landing_view(request: HttpRequest) -> HttpResponse:
    where = landing(request.user)
    if where is None:
        raise PermissionDenied("The consoles are for Ladder staff.")
    return redirect(where)
