"""The base's pure domain code: the audit log's hash chain and calendar months. Nothing here imports Django
(tests/test_layout.py checks it).
"""
