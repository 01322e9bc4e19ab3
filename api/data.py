"""Tenant data: assets, retention policies, the residency report, account closure (being built)."""

from django.urls import URLPattern
from rest_framework.routers import SimpleRouter


def register(router: SimpleRouter) -> None:
    """Add this module's viewsets to the API router."""


urlpatterns: list[URLPattern] = []
