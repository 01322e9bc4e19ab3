"""Provisioning's pure domain code: the table of rungs (``rungs.py``), placement and MIG geometry (``placement/``),
fleet documents, the RDMA fabric, upgrade plans, workloads and their rules, allocation states. Nothing here imports
Django (tests/test_layout.py checks it).
"""
