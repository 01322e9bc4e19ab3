"""Billing's pure domain code: prices, metering arithmetic, margin, reconciliation and FOCUS rows. Nothing here imports
Django (tests/test_layout.py checks it).
"""
