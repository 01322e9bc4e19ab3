"""Routes of the REST API (version 1)."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from api.audit import AuditEventViewSet
from api.tenancy import ApiKeyViewSet, MemberViewSet, TenantView

router = SimpleRouter(trailing_slash=False)
router.register("members", MemberViewSet, basename="member")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("compliance/audit-events", AuditEventViewSet, basename="audit-event")

urlpatterns = [
    path("tenant", TenantView.as_view(), name="tenant"),
    path("", include(router.urls)),
]
