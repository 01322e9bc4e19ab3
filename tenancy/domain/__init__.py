"""Tenancy's pure domain code: the role tables and SSH key parsing. Nothing here imports Django (tests/test_layout.py
checks it).
"""
