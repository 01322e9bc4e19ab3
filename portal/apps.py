from django.apps import AppConfig


class PortalConfig(AppConfig):
    """The self-service portal: Django templates over the same services and selectors as the API."""

    name = "portal"
    verbose_name = "Portal"
