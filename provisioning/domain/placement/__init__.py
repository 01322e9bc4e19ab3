"""The placement domain, free of Django: the GPU catalog, MIG geometry, the isolation policy and the engine.

Everything here is plain Python so that it is tested with hypothesis and benchmarked without a database.
"""
