"""Top-level URLs: the API under /api/v1/, its schema and docs, health probes and the admin."""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.billing import stripe_webhook
from api.health import healthz, readyz
from api.problems import handler404 as api_not_found

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("api/v1/", include("api.urls")),
    path("webhooks/stripe", stripe_webhook, name="stripe-webhook"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # Unknown API paths answer problem+json even with DEBUG on (Django's handler404 only applies with it off).
    re_path(r"^api/", api_not_found),
    path("admin/", admin.site.urls),
]

handler400 = "api.problems.handler400"
handler403 = "api.problems.handler403"
handler404 = "api.problems.handler404"
handler500 = "api.problems.handler500"
