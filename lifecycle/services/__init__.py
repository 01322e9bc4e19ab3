"""Every write of lifecycle, one module per concern (see docs/architecture.md)."""
