"""Provisioning drivers behind one interface (``base.Provisioner``): ``simulated`` (the embedded default) and
``kubernetes`` (the official client, one cluster per hall).
"""
