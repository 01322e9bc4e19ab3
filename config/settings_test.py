"""Settings for the test suite: the production settings with explicit test values, never inferred ones."""

import os

os.environ.setdefault("SECRET_KEY", "test-suite-secret-key-not-for-production")
os.environ.setdefault("LADDER_TASKS_INLINE", "1")
# The test client and the live servers of the browser tests speak plain HTTP, as `make run` does.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
# No Prometheus unless a test starts one (the `prometheus` fixture): a closed local port answers at once, where the
# production default's cluster name would wait on a lookup.
os.environ.setdefault("LADDER_PROMETHEUS_URL", "http://127.0.0.1:9")

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; test passwords are not secrets
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"per_key": "10000/min"}  # noqa: F405
# Django's test client signs in without a request (client.login), which django-axes refuses; the throttling tests
# turn it on (tests/portal/test_signin_throttling.py).
AXES_ENABLED = False
