"""Compliance: legal holds, erasure requests, the compliance residency report (being built)."""

from django.urls import URLPattern
from rest_framework.routers import SimpleRouter


def register(router: SimpleRouter) -> None:
    """Add this module's viewsets to the API router."""


urlpatterns: list[URLPattern] = []
