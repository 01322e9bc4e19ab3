"""Compliance's pure domain code: envelope encryption, retention rules and offline audit verification. Nothing here
imports Django (tests/test_layout.py checks it).
"""
