"""Every write of billing, one module per concern (see docs/architecture.md)."""
