"""Every write of compliance, one module per concern (see docs/architecture.md)."""
