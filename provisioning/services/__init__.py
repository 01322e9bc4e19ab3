"""Every write of provisioning, one module per concern (see docs/architecture.md)."""
