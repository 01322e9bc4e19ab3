"""The user data a VM or bare-metal host boots with (cloud-init): the tenant's own ``cloud_init`` with its SSH
keys, variables and secret files, the volumes it mounts, and Ladder's facts about the machine beside it."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from provisioning.domain.os_images import DEFAULT_OS_IMAGE, OS_IMAGES
from provisioning.domain.workloads import Materials, Workload

OS_SECRET_FILES = "/etc/ladder/secrets"  # noqa: S105 - a directory: where a VM's or host's secrets are files


@dataclass(frozen=True)
class OsMount:
    """A filesystem cloud-init mounts at every boot (an ``/etc/fstab`` line through its ``mounts`` module):
    ``device`` is a block device's path or a virtiofs tag. ``make_fs``: the filesystem to create on the device
    when it holds none yet (a new volume), never over one that is there; None leaves the device as it is."""

    device: str
    path: str
    fstype: str
    read_only: bool = False
    make_fs: str | None = None

    def fstab(self) -> list[str]:
        # nofail: a volume that is not there does not stop the machine from booting (its mount point stays empty).
        options = "defaults,nofail" + (",ro" if self.read_only else "")
        return [self.device, self.path, self.fstype, options, "0", "2" if self.make_fs else "0"]

    def format_command(self) -> list[str] | None:
        """A ``bootcmd`` entry that makes the filesystem only on a blank device: ``blkid -p`` answers 2 when it
        finds no signature at all (cloud-init's own ``fs_setup`` may overwrite a raw disk's filesystem it does not
        recognise; a volume's data must never be)."""
        if self.make_fs is None or self.read_only:
            return None
        device = shlex.quote(self.device)
        script = f"test -b {device} && {{ blkid -p {device} >/dev/null 2>&1; test $? -eq 2; }}"
        return ["sh", "-c", f"{script} && mkfs.{self.make_fs} -q {device} || true"]


def cloud_config(
    user_data: str | None,
    *,
    user: str,
    ssh_keys: Iterable[str],
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    facts: Mapping[str, str] | None = None,
    mounts: Iterable[OsMount] = (),
) -> str:
    """The user data a VM or host boots with: the tenant's, with its SSH keys given to ``user``, its variables in
    ``/etc/environment``, its secret files written readable by ``user`` only, Ladder's ``facts`` about the
    machine (files anyone on it may read, such as its RDMA fabric) and its volumes' ``mounts`` (a blank block
    volume formatted first, at boot). A script is kept as it is and Ladder's part goes beside it as a
    ``#cloud-config`` (MIME multipart)."""
    keys = sorted(set(ssh_keys))
    ours: dict[str, Any] = {}
    if keys:
        ours["users"] = ["default", {"name": user, "ssh_authorized_keys": keys}]
    mounts = list(mounts)
    formats = [command for m in mounts if (command := m.format_command()) is not None]
    if formats:
        ours["bootcmd"] = formats
    if mounts:
        ours["mounts"] = [m.fstab() for m in mounts]
    writes = []
    if env:
        lines = "".join(f"{name}={_env_quote(value)}\n" for name, value in sorted(env.items()))
        writes.append({"path": "/etc/environment", "append": True, "content": lines})
    for path, content in sorted((files or {}).items()):
        writes.append({"path": path, "content": content, "permissions": "0400", "owner": f"{user}:{user}"})
    for path, content in sorted((facts or {}).items()):
        writes.append({"path": path, "content": content, "permissions": "0444"})
    if writes:
        ours["write_files"] = writes
    if user_data and user_data.startswith("#!"):
        if not ours:
            return user_data
        part = "#cloud-config\n" + yaml.safe_dump(ours, sort_keys=True)
        return _multipart([("text/cloud-config", part), ("text/x-shellscript", user_data)])
    config: dict[str, Any] = (yaml.safe_load(user_data) if user_data else None) or {}
    if keys:
        theirs = config.get("users") or ["default"]
        others = [u for u in theirs if not (isinstance(u, dict) and u.get("name") == user)]
        mine = next((u for u in theirs if isinstance(u, dict) and u.get("name") == user), {})
        merged = sorted({*(mine.get("ssh_authorized_keys") or []), *keys})
        config["users"] = [*others, {**mine, "name": user, "ssh_authorized_keys": merged}]
    if writes:
        config["write_files"] = [*(config.get("write_files") or []), *writes]
    if formats:  # before the tenant's own: a command of theirs may use the volume
        config["bootcmd"] = [*formats, *(config.get("bootcmd") or [])]
    if mounts:
        config["mounts"] = [*(config.get("mounts") or []), *ours["mounts"]]
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=True)


def os_user_data(
    workload: Workload | None,
    materials: Materials,
    *,
    env: Mapping[str, str] | None = None,
    facts: Mapping[str, str] | None = None,
    mounts: Iterable[OsMount] = (),
) -> str:
    """The whole user data of a VM or bare-metal host: the tenant's cloud_init with its SSH keys, variables and
    secrets (files in ``OS_SECRET_FILES``: a VM has no secret volume; every secret is a file there), after
    Ladder's own variables ``env`` (the tenant's win: a workload may set its own NCCL_*), ``facts`` files and the
    ``mounts`` of its volumes."""
    w = workload or Workload()
    image = materials.os_image or next(i for i in OS_IMAGES if i.name == DEFAULT_OS_IMAGE)
    files = {f"{OS_SECRET_FILES}/{name}": value for name, value in materials.secrets.items()}
    variables = {**(env or {}), **dict(w.env)}
    return cloud_config(
        w.cloud_init,
        user=image.user,
        ssh_keys=materials.ssh_keys,
        env=variables,
        files=files,
        facts=facts,
        mounts=mounts,
    )


def _env_quote(value: str) -> str:
    """A value as /etc/environment (pam_env) reads it: double-quoted, with quotes and backslashes escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _multipart(parts: list[tuple[str, str]]) -> str:
    boundary = "==LADDER-USER-DATA=="
    body = [f'Content-Type: multipart/mixed; boundary="{boundary}"', "MIME-Version: 1.0", ""]
    for ctype, text in parts:
        body += [f"--{boundary}", f'Content-Type: {ctype}; charset="utf-8"', "", text.rstrip("\n")]
    return "\n".join([*body, f"--{boundary}--", ""])
