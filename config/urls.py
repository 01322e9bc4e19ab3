"""Top-level URLs: the API under /api/v1/, its schema and docs, health probes and metrics, the admin, and the
portal (signup and sign-in at the top, the tenant's pages under /portal/)."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import gateway, simulated_dcgm
from api.billing import stripe_webhook
from api.health import healthz, readyz
from api.metrics import metrics
from api.problems import ProblemsAsJson
from api.problems import handler404 as api_not_found
from api.workloads import SimulatedEndpointView
from portal.admin_site import StaffAdminSite

# The admin asks for a code of the staff user's TOTP device with the password, and opens only for a session that gave
# one (portal/admin_site.py; a staff user with no device enrols with `manage.py staff_totp_enrol`).
admin.site.__class__ = StaffAdminSite


class SchemaView(ProblemsAsJson, SpectacularAPIView):
    metadata_class = None  # OPTIONS answers 405, as for the docs


class DocsView(ProblemsAsJson, SpectacularSwaggerView):
    metadata_class = None  # OPTIONS answers 405: the HTML page has no way to render DRF's metadata


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    # The gateway's hot path, resolved before the API's hundred routes (api/gateway.py).
    path("api/v1/gateway/authorize", gateway.authorize, name="gateway-authorize"),
    path("api/v1/gateway/jwks/<slug:tenant>", gateway.jwks, name="gateway-jwks"),
    path("api/v1/", include("api.urls")),
    path("webhooks/stripe", stripe_webhook, name="stripe-webhook"),
    # Serverless endpoints of the simulated fleet (on Kubernetes they are served at the gateway's hostnames).
    re_path(r"^endpoints/(?P<allocation_id>[0-9]+)/(?P<path>.*)$", SimulatedEndpointView.as_view(), name="endpoint"),
    # The simulated fleet's GPU exporter, for Prometheus (on Kubernetes, NVIDIA's dcgm-exporter on each node).
    path("simulated/dcgm/targets", simulated_dcgm.targets, name="simulated-dcgm-targets"),
    path("simulated/dcgm/<str:hostname>/metrics", simulated_dcgm.node_metrics, name="simulated-dcgm-metrics"),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", DocsView.as_view(url_name="schema"), name="api-docs"),
    # Unknown API paths answer problem+json even with DEBUG on (Django's handler404 only applies with it off).
    # CSRF-exempt like every API view: CsrfViewMiddleware checks a view before it runs, and would otherwise
    # answer a POST here with its HTML 403 page instead of the 404.
    re_path(r"^api/", csrf_exempt(api_not_found)),
    path("admin/", admin.site.urls),
    path("", RedirectView.as_view(pattern_name="portal:home", permanent=False)),
    path("", include("portal.urls")),
]

handler400 = "api.problems.handler400"
handler403 = "api.problems.handler403"
handler404 = "api.problems.handler404"
handler500 = "api.problems.handler500"
