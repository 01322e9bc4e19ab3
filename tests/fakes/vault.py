"""A local HashiCorp Vault for tests: the transit engine's ``encrypt`` and ``decrypt`` endpoints over HTTP, with
Vault's JSON shapes, so key unwrapping (``core.keys``) runs through the real ``hvac`` client instead of mocks.

- ``POST /v1/<mount>/encrypt/<key>`` ``{"plaintext": "<base64>"}`` answers ``{"data": {"ciphertext": "vault:v1:…",
  "key_version": 1}, …}``; ``POST /v1/<mount>/decrypt/<key>`` ``{"ciphertext": "vault:v1:…"}`` answers
  ``{"data": {"plaintext": "<base64>"}, …}``. A named key is made on first encrypt (as ``vault write
  transit/keys/<key>`` would), AES-256-GCM with a 12-byte nonce, the ciphertext ``vault:v1:`` + base64(nonce ‖
  sealed).
- Errors are Vault's: ``{"errors": [...]}`` with 403 ``permission denied`` for a missing or wrong ``X-Vault-Token``,
  400 ``encryption key not found`` for an unknown key, 400 ``invalid ciphertext…`` for one that does not open, 404
  for an unmounted path, and 503 ``Vault is sealed`` while ``sealed``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ROUTE = re.compile(r"^/v1/(?P<mount>[\w-]+)/(?P<op>encrypt|decrypt)/(?P<key>[\w-]+)$")


class VaultServer:
    def __init__(
        self,
        *,
        token: str = "s.test-token",  # noqa: S107 - the fake's own token
        mount: str = "transit",
        host: str = "127.0.0.1",
    ) -> None:
        self.token = token
        self.mount = mount
        self.keys: dict[str, bytes] = {}
        self.sealed = False
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request
        self._lock = threading.Lock()
        vault = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer = vault.handle("POST", self.path, self.headers.get("X-Vault-Token"), body)
                self._send(status, answer)

            def do_PUT(self) -> None:
                self.do_POST()

            def _send(self, status: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> VaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- the transit engine ------------------------------------------------------------------------------------

    def handle(self, method: str, path: str, token: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append((method, path))
            if self.sealed:
                return 503, {"errors": ["Vault is sealed"]}
            if token != self.token:
                return 403, {"errors": ["permission denied"]}
            route = ROUTE.match(path)
            if route is None or route["mount"] != self.mount:
                return 404, {"errors": [f'no handler for route "{path.removeprefix("/v1/")}". route entry not found.']}
            if route["op"] == "encrypt":
                return self._encrypt(route["key"], body)
            return self._decrypt(route["key"], body)

    def _encrypt(self, name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            plaintext = base64.b64decode(body["plaintext"], validate=True)
        except (KeyError, ValueError):
            return 400, {"errors": ["failed to base64-decode plaintext"]}
        key = self.keys.setdefault(name, AESGCM.generate_key(bit_length=256))
        nonce = os.urandom(12)
        sealed = base64.b64encode(nonce + AESGCM(key).encrypt(nonce, plaintext, None)).decode()
        return 200, _response({"ciphertext": f"vault:v1:{sealed}", "key_version": 1})

    def _decrypt(self, name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key = self.keys.get(name)
        if key is None:
            return 400, {"errors": ["encryption key not found"]}
        ciphertext = str(body.get("ciphertext", ""))
        if not ciphertext.startswith("vault:v1:"):
            return 400, {"errors": ["invalid ciphertext: no prefix"]}
        try:
            raw = base64.b64decode(ciphertext.removeprefix("vault:v1:"), validate=True)
            plaintext = AESGCM(key).decrypt(raw[:12], raw[12:], None)
        except (ValueError, InvalidTag):
            return 400, {"errors": ["cipher: message authentication failed"]}
        return 200, _response({"plaintext": base64.b64encode(plaintext).decode()})

    def wrap(self, name: str, text: str) -> str:
        """``text`` wrapped under the transit key ``name``, as ``vault write transit/encrypt/<name>`` gives it."""
        status, answer = self.handle(
            "POST",
            f"/v1/{self.mount}/encrypt/{name}",
            self.token,
            {"plaintext": base64.b64encode(text.encode()).decode()},
        )
        assert status == 200, answer
        ciphertext: str = answer["data"]["ciphertext"]
        return ciphertext


def _response(data: dict[str, Any]) -> dict[str, Any]:
    """Vault's envelope around an answer's ``data``."""
    return {
        "request_id": base64.b16encode(os.urandom(8)).decode().lower(),
        "lease_id": "",
        "renewable": False,
        "lease_duration": 0,
        "data": data,
        "wrap_info": None,
        "warnings": None,
        "auth": None,
    }
