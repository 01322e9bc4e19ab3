"""Ladder settings, read from the environment.

Every variable is documented in docs/architecture.md, "Settings". Defaults are safe: DEBUG is off, SECRET_KEY is
required unless DEBUG is on, and tasks run in-process only when LADDER_TASKS_INLINE says so. A secret may also
be given as a file path in ``<NAME>_FILE``.
"""

from datetime import timedelta
from pathlib import Path
from typing import Any

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured

from core.logs import logging_config
from provisioning.domain.capacity_classes import CLASSES
from provisioning.domain.volume_classes import VolumeClassesInvalid, class_map, secret_map

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.FileAwareEnv(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost"]),
    DATABASE_URL=(str, f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
    CACHE_URL=(str, "locmemcache://"),
    CELERY_BROKER_URL=(str, "redis://127.0.0.1:6379/0"),
    CELERY_TASK_DEFAULT_QUEUE=(str, "celery"),
    LADDER_BEAT_SCHEDULER=(str, ""),
    LADDER_BEAT_REDIS_URL=(str, ""),
    LADDER_BEAT_KEY_PREFIX=(str, "redbeat:"),
    LADDER_BEAT_LOCK_SECONDS=(int, 60),
    LADDER_TASKS_INLINE=(bool, False),
    LADDER_API_RATE=(str, "1200/min"),
    LADDER_ENDPOINT_CALLS_PER_MINUTE=(int, 1200),
    LADDER_ENDPOINT_TOKEN_SECRET=(str, ""),
    LADDER_ENDPOINT_TOKEN_TTL_SECONDS=(int, 3600),
    LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS=(int, 86400),
    LADDER_GATEWAY_KEYS_SECONDS=(int, 30),
    LADDER_TRUSTED_PROXIES=(int, 0),
    LADDER_AUDIT_VERIFY_EVERY_SECONDS=(int, 3600),
    LADDER_AUDIT_CHECKPOINT_EVERY_SECONDS=(int, 3600),
    LADDER_AUDIT_SIGNING_KEY=(str, ""),
    LADDER_STORAGE_URL=(str, (BASE_DIR / "var" / "storage").as_uri() + "/{region}"),
    LADDER_S3_ENDPOINT_URL=(str, ""),
    LADDER_MASTER_KEYS=(str, ""),
    LADDER_SHRED_WAIT_DAYS=(int, 7),
    LADDER_RETENTION_DAYS=(str, ""),
    LADDER_RETENTION_SWEEP_EVERY_SECONDS=(int, 86400),
    LADDER_ASSET_CONTENT_MAX_BYTES=(int, 1024 * 1024),
    LOG_LEVEL=(str, "INFO"),
    LADDER_METRICS_TOKEN=(str, ""),
    LADDER_WORKER_METRICS_PORT=(int, 0),
    LADDER_PROVISIONER=(str, "simulated"),
    LADDER_SIM_PROVISION_SECONDS=(float, 2.0),
    LADDER_SIM_SANITIZE_SECONDS=(float, 5.0),
    LADDER_RECONCILE_EVERY_SECONDS=(float, 5.0),
    LADDER_CAPACITY_SAMPLE_EVERY_SECONDS=(int, 300),
    LADDER_SIM_CHECKPOINT_SECONDS=(float, 60.0),
    LADDER_PREEMPTION_NOTICE_SECONDS=(str, ""),
    LADDER_RESERVATION_ORDER_MAX_GPUS=(int, 64),
    LADDER_SECRETS_KEY=(str, ""),
    LADDER_ATTESTATION_VERIFIER=(str, "node-key"),
    LADDER_ATTESTATION_NONCE_SECONDS=(float, 120),
    LADDER_ATTESTATION_DEADLINE_SECONDS=(float, 900),
    LADDER_SERVERLESS_IDLE_SECONDS=(float, 300.0),
    LADDER_SERVERLESS_WAKE_WAIT_SECONDS=(float, 60.0),
    LADDER_SERVERLESS_AUTOSCALER=(str, "hpa"),
    LADDER_PROMETHEUS_URL=(str, "http://prometheus-operated.monitoring.svc:9090"),
    LADDER_SERVERLESS_PREPULL=(bool, True),
    LADDER_KEEP_WHOLE=(float, 0.0),
    LADDER_SIM_INIT_SECONDS=(float, 1.0),
    LADDER_SIM_IMAGE_GB=(float, 8.0),
    LADDER_SIM_REGISTRY_GB_PER_SECOND=(float, 0.5),
    LADDER_SIM_HUB_GB_PER_SECOND=(float, 0.25),
    LADDER_SIM_VOLUME_GB_PER_SECOND=(float, 2.0),
    LADDER_NODE_FAULT_CONDITIONS=(list, []),
    LADDER_NODE_NOT_READY_GRACE_SECONDS=(float, 60.0),
    LADDER_PUBLIC_URL=(str, "http://127.0.0.1:8000"),
    LADDER_BASE_DOMAIN=(str, "ladder.localhost"),
    LADDER_FABRIC_RESOURCE_PREFIX=(str, "rdma.ladder.io"),
    LADDER_SSH_GATEWAY_PORT=(int, 22),
    LADDER_SSH_GATEWAY_CA=(str, ""),
    LADDER_IMAGE_REGISTRIES=(list, []),
    LADDER_OS_IMAGES=(str, ""),
    LADDER_SIM_LOG_SECONDS=(float, 10.0),
    LADDER_LOG_FOLLOW_SECONDS=(float, 300.0),
    LADDER_LOG_FOLLOW_POLL_SECONDS=(float, 1.0),
    STRIPE_API_KEY=(str, ""),
    STRIPE_API_BASE=(str, "https://api.stripe.com"),
    STRIPE_WEBHOOK_SECRET=(str, ""),
    STRIPE_METER_EVENTS_PER_SECOND=(float, 0.0),
    LADDER_BILLING_CURRENCY=(str, "usd"),
    LADDER_BILLING_GRACE_MINUTES=(float, 10.0),
    LADDER_BILLING_CLOSE_EVERY_SECONDS=(float, 60.0),
    LADDER_BILLING_PUSH_EVERY_SECONDS=(float, 60.0),
    LADDER_BILLING_PUSH_LEASE_SECONDS=(float, 120.0),
    LADDER_PAYMENT_GRACE_HOURS=(float, 72.0),
    LADDER_EXPORT_DIR=(str, str(BASE_DIR / "var" / "exports")),
    LADDER_SIM_VOLUME_DIR=(str, str(BASE_DIR / "var" / "volumes")),
    LADDER_VOLUME_STORAGE_CLASSES=(str, ""),
    LADDER_VOLUME_SNAPSHOT_CLASSES=(str, ""),
    LADDER_VOLUME_CSI_CREDENTIALS=(str, ""),
    LADDER_EXPORT_INLINE_MAX_DAYS=(int, 31),
    LADDER_EXPORT_INLINE_MAX_DAYS_ALL_TENANTS=(int, 7),
    LADDER_EXPORT_WORKERS=(int, 0),
    LADDER_LOGIN_FAILURE_LIMIT=(int, 5),
    LADDER_LOGIN_LOCKOUT_MINUTES=(float, 15.0),
    LADDER_TOTP_ISSUER=(str, "Ladder"),
    LADDER_TLS_TERMINATED_BY_PROXY=(bool, False),
    SECURE_HSTS_SECONDS=(int, 31536000),
    LADDER_KEY_SOURCE=(str, "env"),
    VAULT_ADDR=(str, ""),
    VAULT_TOKEN=(str, ""),
    VAULT_NAMESPACE=(str, ""),
    VAULT_TRANSIT_MOUNT=(str, "transit"),
    VAULT_TRANSIT_KEY=(str, "ladder"),
    VAULT_TIMEOUT_SECONDS=(float, 5.0),
    EMAIL_URL=(str, "consolemail://"),
    DEFAULT_FROM_EMAIL=(str, "Ladder <billing@ladder.invalid>"),
)

DEBUG: bool = env("DEBUG")
SECRET_KEY: str = env("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) is required when DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-only-used-with-DEBUG"  # noqa: S105 - DEBUG only
ALLOWED_HOSTS: list[str] = env("ALLOWED_HOSTS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "core",
    "portal",
    "tenancy",
    "compliance",
    "provisioning",
    "billing",
    "lifecycle",
    "api",
]

MIDDLEWARE = [
    # First: the request id, log context and request metrics see every response, other middleware's refusals too.
    "core.middleware.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.security.ContentSecurityPolicyMiddleware",
    # Last, as django-axes asks: it turns a sign-in refused for a lockout into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL")}
# Keep connections between requests (a new PostgreSQL connection costs more than a whole API request), and
# check them before reuse so a restarted database costs one failed check, not an error.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves a few people; wait for the writer lock instead of failing at once. A transaction
    # takes it as it begins (BEGIN IMMEDIATE): one that read first and wrote later (a service reading, then
    # auditing) would otherwise fail at once with "database is locked" when the beat process wrote in between,
    # since SQLite cannot wait to upgrade a read lock held across another writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, transaction_mode="IMMEDIATE")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {"default": env.cache("CACHE_URL")}
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"]["BACKEND"] = "core.cache.RedisCache"  # one client per pool, not one per operation

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Under /api/ a CSRF refusal is problem+json (403 csrf_failed); other pages keep Django's HTML page.
CSRF_FAILURE_VIEW = "api.problems.csrf_failure"

# The portal: sign-in at /login, a tenant's pages under /portal/.
LOGIN_URL = "portal:login"
LOGIN_REDIRECT_URL = "portal:home"
LOGOUT_REDIRECT_URL = "portal:login"

# Sign-in throttling (django-axes): this many failed sign-ins for one username from one address lock that pair out
# for LADDER_LOGIN_LOCKOUT_MINUTES; a success clears the count. Axes' backend comes first and only refuses a locked
# pair; the model backend checks the password. The address is core.ratelimit.client_address's (REMOTE_ADDR, or with
# LADDER_TRUSTED_PROXIES the one the outermost trusted proxy saw). API keys never go through authenticate() and are
# not counted.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT: int = env("LADDER_LOGIN_FAILURE_LIMIT")
AXES_COOLOFF_TIME = timedelta(minutes=env("LADDER_LOGIN_LOCKOUT_MINUTES"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.signin.locked_out"
AXES_CLIENT_IP_CALLABLE = "core.ratelimit.client_address"
# The second factor (django-otp's TOTP devices): the name authenticator apps show beside the username.
OTP_TOTP_ISSUER: str = env("LADDER_TOTP_ISSUER")

# --- HTTPS ---------------------------------------------------------------------------------------------------
# Secure by default: with DEBUG off, plain HTTP is redirected to HTTPS, HTTPS answers carry HSTS, and the session
# and CSRF cookies are HTTPS-only, so `manage.py check --deploy` is clean (docs/operations.md, "Security"). With
# DEBUG on (`make run`) none of this applies: the development server speaks plain HTTP.
# Behind a proxy that terminates TLS, LADDER_TLS_TERMINATED_BY_PROXY trusts its X-Forwarded-Proto header (the proxy
# must set it on every request and strip any the client sent) and leaves the redirect to the proxy; the health
# probes and the gateway's check are never redirected (the kubelet and the gateway call them over plain HTTP).
LADDER_TLS_TERMINATED_BY_PROXY: bool = env("LADDER_TLS_TERMINATED_BY_PROXY")
if LADDER_TLS_TERMINATED_BY_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if not DEBUG:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not LADDER_TLS_TERMINATED_BY_PROXY)
    # The gateway's check is called inside the cluster, over plain HTTP to Ladder's Service, as the probes are.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^api/v1/gateway/authorize$"]
    SECURE_HSTS_SECONDS: int = env("SECURE_HSTS_SECONDS")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
    if LADDER_TLS_TERMINATED_BY_PROXY and not SECURE_SSL_REDIRECT:
        # The proxy redirects plain HTTP itself: Django's own redirect would be a second, unreachable one.
        SILENCED_SYSTEM_CHECKS = ["security.W008"]

# --- REST API -----------------------------------------------------------------------------------------------
# How many proxies in front of Ladder append the address they saw to X-Forwarded-For (0: none is believed; the
# address is REMOTE_ADDR). Only what really is per caller is counted by address (core/ratelimit.py).
LADDER_TRUSTED_PROXIES: int = env("LADDER_TRUSTED_PROXIES")
if LADDER_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("LADDER_TRUSTED_PROXIES counts proxies: 0 or more.")
# Calls a minute each serverless endpoint or public port takes (the gateway's check, the endpoint's own URL),
# counted per tenant and endpoint; a tenant's own limit (Tenant.endpoint_calls_per_minute) overrides it.
LADDER_ENDPOINT_CALLS_PER_MINUTE: int = env("LADDER_ENDPOINT_CALLS_PER_MINUTE")
if LADDER_ENDPOINT_CALLS_PER_MINUTE < 1:
    raise ImproperlyConfigured("LADDER_ENDPOINT_CALLS_PER_MINUTE must be at least 1.")
# Endpoint tokens (docs/serverless.md): the secret their tenants' signing keys derive from (empty: SECRET_KEY's),
# how long a token lives unless asked otherwise, and the most it may.
LADDER_ENDPOINT_TOKEN_SECRET: str = env("LADDER_ENDPOINT_TOKEN_SECRET") or SECRET_KEY
LADDER_ENDPOINT_TOKEN_TTL_SECONDS: int = env("LADDER_ENDPOINT_TOKEN_TTL_SECONDS")
LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS: int = env("LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS")
if not 60 <= LADDER_ENDPOINT_TOKEN_TTL_SECONDS <= LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS:
    raise ImproperlyConfigured(
        "LADDER_ENDPOINT_TOKEN_TTL_SECONDS must be at least 60 and at most LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS."
    )
# The bound within which a revoked key or a rotated signing key is refused everywhere: the gateway refreshes each
# tenant's JWKS this often (its policy's cacheDuration), and the compatibility check keeps its lookups this long.
LADDER_GATEWAY_KEYS_SECONDS: int = env("LADDER_GATEWAY_KEYS_SECONDS")
if not 1 <= LADDER_GATEWAY_KEYS_SECONDS <= 3600:
    raise ImproperlyConfigured("LADDER_GATEWAY_KEYS_SECONDS must be between 1 and 3600.")
REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiKeyAuthentication",
        "api.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.IdCursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.PerKeyThrottle"],
    "DEFAULT_THROTTLE_RATES": {"per_key": env("LADDER_API_RATE")},
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.problems.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "Ladder API",
    "DESCRIPTION": (
        "GPU capacity on a ladder of rungs, from bare metal to serverless. Errors are application/problem+json "
        "with a stable `code`; POSTs accept `Idempotency-Key`; lists are cursor-paginated."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Operation ids and tags from the path below the prefix (allocations_list, tag allocations); api/schema.py
    # gives every error answer its problem+json shape and every enum a name, for generated clients (sdk/).
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.schema.postprocess"],
    "ENUM_NAME_OVERRIDES": {
        "GpuModelEnum": "provisioning.domain.placement.catalog.GPU_MODEL_NAMES",
        "ReconciliationStateEnum": "billing.models.ReconciliationState",
        "VolumeKindEnum": "api.volumes.KINDS",
        "MovedKindEnum": "provisioning.domain.rungs.MOVABLE_RUNGS",
        "ScalingSignalEnum": "provisioning.domain.workloads.SIGNALS",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Tasks --------------------------------------------------------------------------------------------------
CELERY_BROKER_URL: str = env("CELERY_BROKER_URL")
# The queue tasks go to and workers read unless told otherwise (one per deployment sharing a broker).
CELERY_TASK_DEFAULT_QUEUE: str = env("CELERY_TASK_DEFAULT_QUEUE")
LADDER_TASKS_INLINE: bool = env("LADDER_TASKS_INLINE")
CELERY_TASK_ALWAYS_EAGER = LADDER_TASKS_INLINE
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Where `celery beat` keeps its schedule. Empty: Celery's own scheduler (a file in the working directory; one beat
# process only). "redbeat": the schedule in Redis (celery-redbeat) behind a lock, so a second beat replica waits
# until the first lets go (it releases the lock when it stops; a killed one's lock lapses after
# LADDER_BEAT_LOCK_SECONDS, which the holder renews at every tick: ticks are at most a fifth of it apart).
# config/celery.py hands the redbeat_* values to Celery (redbeat reads them without Celery's CELERY_ namespace).
LADDER_BEAT_SCHEDULER: str = env("LADDER_BEAT_SCHEDULER")
LADDER_BEAT_REDIS_URL: str = env("LADDER_BEAT_REDIS_URL") or CELERY_BROKER_URL
LADDER_BEAT_KEY_PREFIX: str = env("LADDER_BEAT_KEY_PREFIX")
LADDER_BEAT_LOCK_SECONDS: int = env("LADDER_BEAT_LOCK_SECONDS")
if LADDER_BEAT_SCHEDULER == "redbeat":
    if LADDER_BEAT_LOCK_SECONDS < 5:
        raise ImproperlyConfigured("LADDER_BEAT_LOCK_SECONDS must be at least 5 seconds.")
    CELERY_BEAT_SCHEDULER = "redbeat.RedBeatScheduler"
    CELERY_BEAT_MAX_LOOP_INTERVAL = LADDER_BEAT_LOCK_SECONDS // 5
elif LADDER_BEAT_SCHEDULER:
    raise ImproperlyConfigured(f"LADDER_BEAT_SCHEDULER is {LADDER_BEAT_SCHEDULER!r}: leave it empty or say redbeat.")
# How often the fleet's capacity (GPUs, idle, stranded per GPU model and hall) is sampled for finance's margin.
LADDER_CAPACITY_SAMPLE_EVERY_SECONDS: int = env("LADDER_CAPACITY_SAMPLE_EVERY_SECONDS")
CELERY_BEAT_SCHEDULE = {
    "audit-verify": {
        "task": "compliance.tasks.audit_verify_scheduled",
        "schedule": env("LADDER_AUDIT_VERIFY_EVERY_SECONDS"),
    },
    "audit-checkpoint": {
        "task": "compliance.tasks.audit_checkpoint_scheduled",
        "schedule": env("LADDER_AUDIT_CHECKPOINT_EVERY_SECONDS"),
    },
    "idempotency-purge": {"task": "api.tasks.idempotency_purge_expired", "schedule": 3600},
    "placement-journal-prune": {"task": "provisioning.tasks.placement_journal_prune", "schedule": 3600},
    "billing-close-windows": {
        "task": "lifecycle.tasks.billing_close_windows",
        "schedule": env("LADDER_BILLING_CLOSE_EVERY_SECONDS"),
    },
    "billing-push": {"task": "billing.tasks.billing_push", "schedule": env("LADDER_BILLING_PUSH_EVERY_SECONDS")},
    "billing-enforce": {"task": "billing.tasks.billing_enforce", "schedule": 300},
    # Last month's reconciliation, once its invoices are final (it starts one run a month; the hourly check is cheap)
    "billing-reconcile-monthly": {"task": "billing.tasks.reconciliation_monthly", "schedule": 3600},
    "retention-sweep": {
        "task": "compliance.tasks.retention_sweep_scheduled",
        "schedule": env("LADDER_RETENTION_SWEEP_EVERY_SECONDS"),
    },
    "closures-resume": {"task": "lifecycle.tasks.closures_resume", "schedule": 60},
    "allocations-reconcile": {
        "task": "provisioning.tasks.allocations_reconcile",
        "schedule": env("LADDER_RECONCILE_EVERY_SECONDS"),
    },
    "defragment-advance": {
        "task": "provisioning.tasks.defragment_runs_advance",
        "schedule": env("LADDER_RECONCILE_EVERY_SECONDS"),
    },
    "capacity-sample": {
        "task": "provisioning.tasks.capacity_sample",
        "schedule": LADDER_CAPACITY_SAMPLE_EVERY_SECONDS,
    },
    # Allocations idle past their idle_stop_after: notice, then stop (docs/telemetry.md, "Idle stop").
    "idle-stop-check": {"task": "lifecycle.tasks.idle_stop_check", "schedule": 60},
    "reservations-expire": {"task": "lifecycle.tasks.reservations_expire", "schedule": 60},
}

# --- Audit --------------------------------------------------------------------------------------------------
# Ed25519 key signing the audit chain's checkpoints and exported bundles: PEM, or base64 of the 32-byte seed
# (or a file through LADDER_AUDIT_SIGNING_KEY_FILE); empty: derived from SECRET_KEY (set one in production).
LADDER_AUDIT_SIGNING_KEY: str = env("LADDER_AUDIT_SIGNING_KEY")

# --- Data-asset storage -------------------------------------------------------------------------------------
# Where encrypted asset blobs go, one place per region (the URL must contain "{region}"): file:///dir/{region}
# (the embedded default, under var/storage) or s3://ladder-{region}/assets. Stored locations keep their own URL,
# so blobs written before a change stay readable.
LADDER_STORAGE_URL: str = env("LADDER_STORAGE_URL")
# S3-compatible endpoint (MinIO, Ceph...); empty: AWS. Credentials come from boto3's chain (AWS_* variables...).
LADDER_S3_ENDPOINT_URL: str = env("LADDER_S3_ENDPOINT_URL")

# --- Volumes -------------------------------------------------------------------------------------------------
# The simulated fleet's volumes: a directory per volume (and per snapshot) under this one (docs/volumes.md).
LADDER_SIM_VOLUME_DIR: str = env("LADDER_SIM_VOLUME_DIR")
# The Kubernetes driver's volumes, per region and kind, "<region>/<kind>=<value>,...": the StorageClass of each
# volume's PersistentVolumeClaim, the VolumeSnapshotClass of its snapshots, and the CSI driver's credentials Secret
# ("<namespace>/<name>") whose keys each volume's key Secret carries beside its passphrase (docs/volumes.md, "On
# Kubernetes (operators)"). Read here, so a mistake stops the process at start rather than a volume later.
LADDER_VOLUME_STORAGE_CLASSES: str = env("LADDER_VOLUME_STORAGE_CLASSES")
LADDER_VOLUME_SNAPSHOT_CLASSES: str = env("LADDER_VOLUME_SNAPSHOT_CLASSES")
LADDER_VOLUME_CSI_CREDENTIALS: str = env("LADDER_VOLUME_CSI_CREDENTIALS")
try:
    class_map(LADDER_VOLUME_STORAGE_CLASSES, "LADDER_VOLUME_STORAGE_CLASSES")
    class_map(LADDER_VOLUME_SNAPSHOT_CLASSES, "LADDER_VOLUME_SNAPSHOT_CLASSES")
    secret_map(LADDER_VOLUME_CSI_CREDENTIALS, "LADDER_VOLUME_CSI_CREDENTIALS")
except VolumeClassesInvalid as error:
    raise ImproperlyConfigured(str(error)) from None

# --- Data assets, retention -------------------------------------------------------------------------------
# Master keys wrapping tenant keys: "id:base64key[,id:base64key...]", the first wraps new keys and the others
# only unwrap (rotation: put a new one first, run `manage.py master_key_rotate`, then drop the old one). Or a
# file through LADDER_MASTER_KEYS_FILE; empty: one key derived from SECRET_KEY (set your own in production).
LADDER_MASTER_KEYS: str = env("LADDER_MASTER_KEYS")

# --- Key source ---------------------------------------------------------------------------------------------
# Where LADDER_MASTER_KEYS, LADDER_AUDIT_SIGNING_KEY and LADDER_SECRETS_KEY come from (core/keys.py): "env" (the
# values are the keys) or "vault" (the values are wrapped by Vault's transit engine, unwrapped at start with the
# transit key VAULT_TRANSIT_KEY under VAULT_TRANSIT_MOUNT at VAULT_ADDR, as VAULT_TOKEN or VAULT_TOKEN_FILE).
LADDER_KEY_SOURCE: str = env("LADDER_KEY_SOURCE")
if LADDER_KEY_SOURCE not in ("env", "vault"):
    raise ImproperlyConfigured(f"LADDER_KEY_SOURCE must be env or vault, not {LADDER_KEY_SOURCE!r}.")
VAULT_ADDR: str = env("VAULT_ADDR")
VAULT_TOKEN: str = env("VAULT_TOKEN")
VAULT_NAMESPACE: str = env("VAULT_NAMESPACE")
VAULT_TRANSIT_MOUNT: str = env("VAULT_TRANSIT_MOUNT")
VAULT_TRANSIT_KEY: str = env("VAULT_TRANSIT_KEY")
VAULT_TIMEOUT_SECONDS: float = env("VAULT_TIMEOUT_SECONDS")
if LADDER_KEY_SOURCE == "vault" and not (VAULT_ADDR and VAULT_TOKEN.strip()):
    raise ImproperlyConfigured("LADDER_KEY_SOURCE=vault needs VAULT_ADDR and VAULT_TOKEN (or VAULT_TOKEN_FILE).")
# Waiting period before a deletion destroys a data key (7-30 days); it can be cancelled until then.
LADDER_SHRED_WAIT_DAYS: int = env("LADDER_SHRED_WAIT_DAYS")
if not 7 <= LADDER_SHRED_WAIT_DAYS <= 30:
    raise ImproperlyConfigured("LADDER_SHRED_WAIT_DAYS must be between 7 and 30 days.")
# Default retention per category, "category=days,...", over the built-in defaults (compliance.data_rules).
LADDER_RETENTION_DAYS: str = env("LADDER_RETENTION_DAYS")
# Largest content accepted inline (base64 in the JSON body) when a data asset is registered.
LADDER_ASSET_CONTENT_MAX_BYTES: int = env("LADDER_ASSET_CONTENT_MAX_BYTES")

# --- Provisioning -------------------------------------------------------------------------------------------
LADDER_PROVISIONER: str = env("LADDER_PROVISIONER")
LADDER_SIM_PROVISION_SECONDS: float = env("LADDER_SIM_PROVISION_SECONDS")
LADDER_SIM_SANITIZE_SECONDS: float = env("LADDER_SIM_SANITIZE_SECONDS")
LADDER_SIM_CHECKPOINT_SECONDS: float = env("LADDER_SIM_CHECKPOINT_SECONDS")
# The notice preempted work gets, by capacity class, "class=seconds,..." over each class's default (spot: 30 s),
# at most 10 minutes: the time a job has to save its checkpoint before it is killed (docs/capacity.md).
LADDER_PREEMPTION_NOTICE_SECONDS: dict[str, int] = {}
for _term in filter(None, (t.strip() for t in env("LADDER_PREEMPTION_NOTICE_SECONDS").split(","))):
    _class, _, _seconds = _term.partition("=")
    if _class.strip() not in {c.value for c, facts in CLASSES.items() if facts.preemptible}:
        raise ImproperlyConfigured(f"LADDER_PREEMPTION_NOTICE_SECONDS: {_class!r} is not a preemptible class.")
    if not _seconds.strip().isdigit() or int(_seconds) > 600:
        raise ImproperlyConfigured(f"LADDER_PREEMPTION_NOTICE_SECONDS: {_term!r} is not class=seconds (0 to 600).")
    LADDER_PREEMPTION_NOTICE_SECONDS[_class.strip()] = int(_seconds)
LADDER_RESERVATION_ORDER_MAX_GPUS: int = env("LADDER_RESERVATION_ORDER_MAX_GPUS")  # ordered by a tenant itself
# Key of cluster credentials at rest (32 bytes, base64); empty: derived from SECRET_KEY.
LADDER_SECRETS_KEY: str = env("LADDER_SECRETS_KEY")
# Who judges a confidential VM's attestation evidence: "node-key" (signed by the host's registered key) or a
# dotted path to a verifier class.
LADDER_ATTESTATION_VERIFIER: str = env("LADDER_ATTESTATION_VERIFIER")
# How long an attestation nonce may be used (once); how long a confidential VM may wait for a verified verdict.
LADDER_ATTESTATION_NONCE_SECONDS: float = env("LADDER_ATTESTATION_NONCE_SECONDS")
LADDER_ATTESTATION_DEADLINE_SECONDS: float = env("LADDER_ATTESTATION_DEADLINE_SECONDS")
# A serverless endpoint with an empty queue (simulated: no call) this long is scaled to zero replicas and idles.
LADDER_SERVERLESS_IDLE_SECONDS: float = env("LADDER_SERVERLESS_IDLE_SECONDS")
# The first request to an idle endpoint is held this long at most while it wakes (then 503 endpoint_waking).
LADDER_SERVERLESS_WAKE_WAIT_SECONDS: float = env("LADDER_SERVERLESS_WAKE_WAIT_SECONDS")
# What scales serverless endpoints on Kubernetes: "hpa" (a HorizontalPodAutoscaler on the external metrics a metrics
# adapter serves) or "keda" (a KEDA ScaledObject querying LADDER_PROMETHEUS_URL); docs/serverless.md.
LADDER_SERVERLESS_AUTOSCALER: str = env("LADDER_SERVERLESS_AUTOSCALER")
if LADDER_SERVERLESS_AUTOSCALER not in ("hpa", "keda"):
    raise ImproperlyConfigured(
        f"LADDER_SERVERLESS_AUTOSCALER must be hpa or keda, not {LADDER_SERVERLESS_AUTOSCALER!r}."
    )
# The Prometheus KEDA's triggers query for an endpoint's queue depth and KV cache use.
LADDER_PROMETHEUS_URL: str = env("LADDER_PROMETHEUS_URL")
# An endpoint that goes idle has its image pulled in advance on the hosts likely to take its next replica.
LADDER_SERVERLESS_PREPULL: bool = env("LADDER_SERVERLESS_PREPULL")
# The share of a pool's GPUs kept whole for whole-GPU work (0: off); docs/placement.md, "Keeping GPUs whole".
LADDER_KEEP_WHOLE: float = env("LADDER_KEEP_WHOLE")
if not 0.0 <= LADDER_KEEP_WHOLE < 1.0:
    raise ImproperlyConfigured(f"LADDER_KEEP_WHOLE is a share of a pool's GPUs, 0 up to 1, not {LADDER_KEEP_WHOLE}.")
# The simulated fleet's cold starts (provisioning.domain.cold_start): the device wait, the image (this size, at the
# registry's bandwidth, unless the host holds it), a fixed init, the weights at the hub's or volume's GB a second.
LADDER_SIM_INIT_SECONDS: float = env("LADDER_SIM_INIT_SECONDS")
LADDER_SIM_IMAGE_GB: float = env("LADDER_SIM_IMAGE_GB")
LADDER_SIM_REGISTRY_GB_PER_SECOND: float = env("LADDER_SIM_REGISTRY_GB_PER_SECOND")
LADDER_SIM_HUB_GB_PER_SECOND: float = env("LADDER_SIM_HUB_GB_PER_SECOND")
LADDER_SIM_VOLUME_GB_PER_SECOND: float = env("LADDER_SIM_VOLUME_GB_PER_SECOND")
for _name in ("LADDER_SIM_REGISTRY_GB_PER_SECOND", "LADDER_SIM_HUB_GB_PER_SECOND", "LADDER_SIM_VOLUME_GB_PER_SECOND"):
    if not globals()[_name] > 0:
        raise ImproperlyConfigured(f"{_name} must be more than 0 (GB a second).")
if LADDER_SIM_INIT_SECONDS < 0 or LADDER_SIM_IMAGE_GB < 0:
    raise ImproperlyConfigured("LADDER_SIM_INIT_SECONDS and LADDER_SIM_IMAGE_GB must be 0 or more.")
# Node conditions that mean a GPU node is failing (Kubernetes driver; comma-separated ``Type`` or ``Type=Status``);
# empty: provisioning.drivers.kubernetes.health's DEFAULT_FAULT_CONDITIONS (NVSentinel, node-problem-detector).
LADDER_NODE_FAULT_CONDITIONS: list[str] = env("LADDER_NODE_FAULT_CONDITIONS")
# A node's Ready condition False or Unknown this long counts as a fault (a kubelet restart does not).
LADDER_NODE_NOT_READY_GRACE_SECONDS: float = env("LADDER_NODE_NOT_READY_GRACE_SECONDS")

# --- Workloads and access -----------------------------------------------------------------------------------
# Where Ladder's own API is reached from outside (links in answers: consoles, simulated endpoints, dataset
# downloads for workloads); no trailing slash.
LADDER_PUBLIC_URL: str = env("LADDER_PUBLIC_URL").rstrip("/")
# Public hostnames: endpoints at ldr-<id>[-<port>].<base domain> (Gateway API HTTPRoutes), SSH at
# ssh.<hall>.<base domain> (the hall's SSH gateway, routing by the user ldr-<id>).
LADDER_BASE_DOMAIN: str = env("LADDER_BASE_DOMAIN")
# The SR-IOV network device plugin's resource prefix of the RDMA VF pools, one per rail: <prefix>/rail<r>
# (docs/kubernetes.md, "The RDMA fabric"); Kueue's configuration leaves "<prefix>/" out of its accounting.
LADDER_FABRIC_RESOURCE_PREFIX: str = env("LADDER_FABRIC_RESOURCE_PREFIX")
LADDER_SSH_GATEWAY_PORT: int = env("LADDER_SSH_GATEWAY_PORT")
# The public key of the CA that signs the SSH gateways' own upstream certificates (one line, "ssh-ed25519 AAAA..."):
# every workload with SSH trusts it for the gateway's login, so a hall gateway reaches the sidecar, VM or host
# after checking the caller's key. Empty: workloads trust only the tenant's keys (no gateway hop).
LADDER_SSH_GATEWAY_CA: str = env("LADDER_SSH_GATEWAY_CA")
# Registries a workload's image may come from (comma-separated hosts); empty: provisioning.domain.workload_rules'
# DEFAULT_REGISTRIES.
LADDER_IMAGE_REGISTRIES: list[str] = env("LADDER_IMAGE_REGISTRIES")
# The operating systems offered on the VM and bare-metal rungs: JSON, a list of objects with the fields of
# provisioning.domain.os_images.OsImage; empty: its OS_IMAGES.
LADDER_OS_IMAGES: str = env("LADDER_OS_IMAGES")
# The simulated provisioner's workloads print a line this often.
LADDER_SIM_LOG_SECONDS: float = env("LADDER_SIM_LOG_SECONDS")
# GET .../logs?follow=1 streams new lines this long at most (the client reconnects with since=), looking this often.
LADDER_LOG_FOLLOW_SECONDS: float = env("LADDER_LOG_FOLLOW_SECONDS")
LADDER_LOG_FOLLOW_POLL_SECONDS: float = env("LADDER_LOG_FOLLOW_POLL_SECONDS")

# --- Billing ------------------------------------------------------------------------------------------------
# Without STRIPE_API_KEY the product runs ledger-only: usage, invoices and budgets are computed locally.
STRIPE_API_KEY: str = env("STRIPE_API_KEY")
STRIPE_API_BASE: str = env("STRIPE_API_BASE")
STRIPE_WEBHOOK_SECRET: str = env("STRIPE_WEBHOOK_SECRET")
# Meter events per second the pusher allows itself; 0: Stripe's limit for the key (1,000/s live, 25/s test).
STRIPE_METER_EVENTS_PER_SECOND: float = env("STRIPE_METER_EVENTS_PER_SECOND")
LADDER_BILLING_CURRENCY: str = env("LADDER_BILLING_CURRENCY")
LADDER_BILLING_GRACE_MINUTES: float = env("LADDER_BILLING_GRACE_MINUTES")
# A pusher that dies mid-batch leaves its rows claimed this long; then another pusher sends them again.
LADDER_BILLING_PUSH_LEASE_SECONDS: float = env("LADDER_BILLING_PUSH_LEASE_SECONDS")
LADDER_PAYMENT_GRACE_HOURS: float = env("LADDER_PAYMENT_GRACE_HOURS")
# Finance exports (FOCUS): where export jobs write their files and signatures, and the largest range in days that
# GET /api/v1/finance/exports streams at once, for one tenant and for all; a larger range is an export job (POST).
LADDER_EXPORT_DIR: str = env("LADDER_EXPORT_DIR")
LADDER_EXPORT_INLINE_MAX_DAYS: int = env("LADDER_EXPORT_INLINE_MAX_DAYS")
LADDER_EXPORT_INLINE_MAX_DAYS_ALL_TENANTS: int = env("LADDER_EXPORT_INLINE_MAX_DAYS_ALL_TENANTS")
# Processes that write one large export (billing_export and export jobs); 0: one per CPU.
LADDER_EXPORT_WORKERS: int = env("LADDER_EXPORT_WORKERS")
_email = env.email_url("EMAIL_URL")  # consolemail:// (default), smtp+tls://user:password@host:587 ...
EMAIL_BACKEND: str = _email["EMAIL_BACKEND"]
EMAIL_HOST = _email.get("EMAIL_HOST", "localhost")
EMAIL_PORT = _email.get("EMAIL_PORT", 25)
EMAIL_HOST_USER = _email.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = _email.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _email.get("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = _email.get("EMAIL_USE_SSL", False)
DEFAULT_FROM_EMAIL: str = env("DEFAULT_FROM_EMAIL")

# --- Logging and metrics ------------------------------------------------------------------------------------
# One line per event, JSON by default in production, aligned text with DEBUG on (core/logs.py); stdlib logging and
# structlog come out through the same formatter, with the request's or task's context and secrets redacted.
LOG_FORMAT: str = env("LOG_FORMAT", default="console" if DEBUG else "json")
LOGGING = logging_config(log_format=LOG_FORMAT, level=env("LOG_LEVEL"))
# Celery's worker keeps these handlers instead of installing its own (its task lines are stdlib logging too).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# /metrics (api/metrics.py): open when empty (keep it off the public ingress); otherwise only a scrape with
# "Authorization: Bearer <token>" is answered, anything else 404 not_found.
LADDER_METRICS_TOKEN: str = env("LADDER_METRICS_TOKEN")
# A Celery worker serves its own metrics on this port (0: not served); see docs/operations.md.
LADDER_WORKER_METRICS_PORT: int = env("LADDER_WORKER_METRICS_PORT")
