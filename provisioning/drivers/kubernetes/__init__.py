"""The Kubernetes provisioning driver: pure renderers from allocation shapes to manifests (``render.py``), node
diagnosis (``diagnosis.py``), and the applier/reconciler that talks to clusters through the official client."""
