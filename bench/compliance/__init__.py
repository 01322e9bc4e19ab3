"""The compliance benchmarks (``python -m bench.compliance``): the audit chain and the retention sweep; see
``__main__.py``."""
