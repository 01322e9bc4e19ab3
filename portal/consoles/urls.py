"""The consoles' URLs, under /console/, in the portal's namespace (so the portal's headers, CSP included, apply).
Importing a console's module registers it with the frame; a new console adds its module here."""

from django.urls import URLPattern, path

from portal.consoles import compliance, finance, frame, operators
from portal.consoles.views import landing_view

urlpatterns: list[URLPattern] = [
    path("console/", landing_view, name="console"),
    *compliance.urlpatterns,
    *operators.urlpatterns,
    *finance.urlpatterns,
]

__all__ = ["frame", "urlpatterns"]
