"""Where Ladder is and which key to use: ``ladder login`` stores them (mode 0600) in the user's config directory;
``LADDER_URL`` and ``LADDER_API_KEY`` override what is stored."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import typer

from ladder_cli.errors import NOT_SIGNED_IN, CliError

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/ladder/config.json`` on Linux (``~/.config/ladder``), the platform's own elsewhere."""
    return Path(typer.get_app_dir("ladder")) / "config.json"


@dataclass(frozen=True)
class Credentials:
    url: str
    api_key: str

    @property
    def shown_key(self) -> str:
        """The key's public prefix only (``ldr_d130f92d5f3f…``): the secret part is never printed."""
        return self.api_key[:16] + "…"


def stored() -> dict[str, str]:
    path = config_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError as error:
        raise CliError(f"{path} is not valid JSON ({error}): run `ladder login` again", NOT_SIGNED_IN) from error
    return {key: str(value) for key, value in data.items() if key in ("url", "api_key")}


def ladder_url() -> str:
    """Where Ladder is: LADDER_URL, else what `ladder login` stored, else the embedded default's address."""
    return (os.environ.get("LADDER_URL") or stored().get("url") or DEFAULT_URL).rstrip("/")


def credentials() -> Credentials:
    """The URL and key to use, or exit 3 when there is no key."""
    key = os.environ.get("LADDER_API_KEY") or stored().get("api_key")
    if not key:
        raise CliError("not signed in: run `ladder login` (or set LADDER_URL and LADDER_API_KEY)", NOT_SIGNED_IN)
    return Credentials(url=ladder_url(), api_key=key)


def save(creds: Credentials) -> Path:
    """Write the file readable by its owner only, created so from the start (no moment where others can read it)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(".tmp")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({"url": creds.url, "api_key": creds.api_key}, out)
    os.replace(partial, path)
    return path


def forget() -> bool:
    path = config_path()
    if path.exists():
        path.unlink()
        return True
    return False
