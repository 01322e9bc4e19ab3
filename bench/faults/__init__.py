"""The fault run (``python -m bench.faults``, ``make faults``); see ``__main__.py``."""
