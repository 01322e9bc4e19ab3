"""Benchmarks of the pure domain modules, run as ``python -m bench.<name>``; no Django, no database."""
