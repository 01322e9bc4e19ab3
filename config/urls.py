"""Top-level URLs: the API under /api/v1/, its schema and docs, health probes and the admin."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.health import healthz, readyz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]

handler400 = "api.problems.handler400"
handler403 = "api.problems.handler403"
handler404 = "api.problems.handler404"
handler500 = "api.problems.handler500"
