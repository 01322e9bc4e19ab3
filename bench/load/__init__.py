"""The load run and its locustfile; see ``__main__.py``."""
