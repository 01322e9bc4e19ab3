"""NVIDIA's XID errors: what each means, and which are fatal to the GPU (no Django).

DCGM reports a GPU's last XID as ``DCGM_FI_DEV_XID_ERRORS``. An XID the driver logs because an application did
something wrong (a memory page fault, a stopped kernel) is the tenant's to fix and says nothing about the node; a
fatal one (the GPU fell off the bus, an uncorrectable memory error, NVLink or its firmware failing) means no work can
trust the GPU until it is reset or replaced: Ladder quarantines its node and places the work on it elsewhere, as
for a failing node condition (``provisioning.gpu_faults``). Meanings follow NVIDIA's XID catalog
(docs.nvidia.com/deploy/xid-errors) in short.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class XidClass(StrEnum):
    APPLICATION = "application"  # the workload's own error: its GPU is sound
    INFORMATIONAL = "informational"  # worth a look (a reset at the next chance), not a reason to stop work
    FATAL = "fatal"  # the GPU cannot be trusted until reset or replaced: quarantine the node


@dataclass(frozen=True)
class Xid:
    code: int
    meaning: str
    kind: XidClass

    @property
    def fatal(self) -> bool:
        return self.kind is XidClass.FATAL

    def as_dict(self) -> dict[str, object]:
        return {"xid": self.code, "meaning": self.meaning, "class": self.kind.value, "fatal": self.fatal}


APP, INFO, FATAL = XidClass.APPLICATION, XidClass.INFORMATIONAL, XidClass.FATAL
XIDS: dict[int, Xid] = {
    x.code: x
    for x in (
        Xid(13, "Graphics engine exception: an application's kernel faulted (a bad address or instruction)", APP),
        Xid(31, "GPU memory page fault: an application touched memory it does not own", APP),
        Xid(32, "Invalid or corrupted push buffer stream", INFO),
        Xid(43, "GPU stopped processing: an application's kernel hit an error and was stopped", APP),
        Xid(45, "Preemptive cleanup after an earlier error: the channel was torn down", APP),
        Xid(48, "Double-bit ECC error: uncorrectable memory error; the GPU must be reset", FATAL),
        Xid(61, "Internal micro-controller breakpoint or warning", INFO),
        Xid(62, "Internal micro-controller halt", FATAL),
        Xid(63, "ECC page retirement or row remapping recorded: takes effect at the next reset", INFO),
        Xid(64, "ECC page retirement or row remapping failed: the memory cannot be repaired in place", FATAL),
        Xid(68, "Video decoder (NVDEC) exception", APP),
        Xid(69, "Graphics engine class error", APP),
        Xid(74, "NVLink error: a link between GPUs failed", FATAL),
        Xid(79, "The GPU has fallen off the bus: the host can no longer reach it", FATAL),
        Xid(92, "High single-bit ECC error rate", INFO),
        Xid(94, "Contained ECC error: the application using the memory was stopped; reset the GPU when idle", INFO),
        Xid(95, "Uncontained ECC error: every application on the GPU is affected; the GPU must be reset", FATAL),
        Xid(119, "GSP RPC timeout: the GPU's system processor stopped answering", FATAL),
        Xid(120, "GSP error: the GPU's system processor failed", FATAL),
    )
}


def xid(code: int) -> Xid:
    """The XID ``code``; one NVIDIA's catalog has but this table does not is informational, named by its number."""
    return XIDS.get(code) or Xid(code, f"XID {code} (see NVIDIA's XID catalog)", XidClass.INFORMATIONAL)
