"""MIG slices and soft shares: the GPU (and for MIG the start) a slice or a share of one GPU goes to, under either
policy, and who may share a GPU (rules 1 and 2 of docs/design.md §3, through ``isolation.py``). Part of the placement
engine (``engine.py``); a fresh GPU, when a slice or share needs one, is chosen as a whole-GPU request's node would
be (``whole_gpus.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from functools import partial

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Device, Placement, Request, Share, mig_milli
from provisioning.domain.placement.isolation import Refusal, TenantPolicy, may_join_mig_gpu, may_join_soft_gpu
from provisioning.domain.placement.mig import COMPUTE_SLICES, EMPTY, GEOMETRY, MigKind, best_start, place
from provisioning.domain.placement.state import FULL_SHARE, GpuSlot
from provisioning.domain.placement.whole_gpus import EPSILON, WholeGpuPlacement
from provisioning.domain.placement.workload import PoolView
from provisioning.domain.rungs import RUNGS, SOFT_SHARING, Security

LEVEL_SCAN = 32  # a tenant's soft-share levels scored per pool, fullest first; bounds the cost of a decision


def mig_join_refusal(gpu: GpuSlot, policy: TenantPolicy, security: Security) -> Refusal | None:
    """Why the tenant may not have a MIG slice on this partly used GPU (rule 2), None when it may."""
    others = any(t != policy.tenant_id for t in gpu.mig_tenants)
    return may_join_mig_gpu(policy, security, others, gpu.mig_dedicated)


class SharePlacement(WholeGpuPlacement):
    """The engine's MIG slices (``_mig``) and soft shares (``_soft``)."""

    def _fresh_gpu(self, models: Iterable[str], halls: list[str]) -> GpuSlot | None:
        """A free GPU on the node with the fewest free GPUs (keeps empty nodes empty for whole-GPU work), in a pool
        that has more than it keeps whole (``_fresh_buckets``)."""
        node = self._best_node(models, halls, 1, buckets_of=self._fresh_buckets)
        if node is None:
            return None
        return next(g for g in node.gpus if g.free)

    def _mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        if self.policy == "fragmentation":
            choice = self._scored_mig(request, policy, halls, blocked)
        else:
            choice = self._best_fit_mig(request, policy, halls, blocked)
        if choice is None:
            return None
        gpu, start, kind = choice
        self.state.set_mig(
            gpu, place(gpu.mig, kind, start), policy.tenant_id, mig_milli(kind), policy.dedicated_hardware
        )
        node = gpu.node
        device = Device(node.id, node.hostname, gpu.index, gpu.uuid, request.mig_profile, start)
        return self._placement(request, policy, node.model, [device])

    def _scored_mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> tuple[GpuSlot, int, MigKind] | None:
        """The partly used GPU (one per distinct MIG state) where the slice, at its most valuable start, raises the
        expected fragmentation least, ties towards the tightest; a fresh GPU, from the node and pool the score
        prefers, only when no partly used one fits (cutting a fresh GPU takes a whole GPU from everybody)."""
        security = RUNGS[request.rung].security
        profile = request.mig_profile or ""
        best: tuple[tuple[float, int, int, int], GpuSlot, int, MigKind] | None = None
        for rank, model in enumerate(request.models):
            kind = CATALOG[model].mig_profiles[profile]
            for hall in halls:
                view = self._view((model, hall))
                for mig_state, gpus in self.state.mig_by_state.get((model, hall), {}).items():
                    fit = best_start(mig_state, kind)
                    if fit is None:
                        continue
                    after = place(mig_state, kind, fit[0])
                    score = view.mig_fragmentation(after) - view.mig_fragmentation(mig_state)
                    key = (round(score / EPSILON) * EPSILON, 0, fit[1], rank)
                    if best is not None and key >= best[0]:
                        continue
                    for gpu in gpus.values():
                        if not self._host_fits(gpu.node):
                            continue
                        why = mig_join_refusal(gpu, policy, security)
                        if why is None:
                            best = (key, gpu, fit[0], kind)
                            break
                        if not blocked:
                            blocked.append(why)
        if best is not None:
            return best[1:]
        for rank, model in enumerate(request.models):
            kind = CATALOG[model].mig_profiles[profile]
            fit = best_start(EMPTY, kind)
            if fit is None:
                continue
            leaves = partial(PoolView.mig_fragmentation, state=place(EMPTY, kind, fit[0]))
            room = (COMPUTE_SLICES - GEOMETRY[kind].compute) * FULL_SHARE / COMPUTE_SLICES
            found = self._scored_node((model,), halls, 1, leaves=leaves, buckets_of=self._fresh_buckets, room=room)
            if found is None:
                continue
            key = (round(found[0] / EPSILON) * EPSILON, 1, fit[1], rank)
            if best is None or key < best[0]:
                best = (key, next(g for g in found[1].gpus if g.free), fit[0], kind)
        return None if best is None else best[1:]

    def _best_fit_mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> tuple[GpuSlot, int, MigKind] | None:
        security = RUNGS[request.rung].security
        profile = request.mig_profile or ""
        best: tuple[int, GpuSlot, int, MigKind] | None = None
        for model in request.models:
            kind = CATALOG[model].mig_profiles[profile]
            for hall in halls:
                for mig_state, gpus in self.state.mig_by_state.get((model, hall), {}).items():
                    fit = best_start(mig_state, kind)
                    if fit is None or (best is not None and fit[1] >= best[0]):
                        continue
                    for gpu in gpus.values():
                        if not self._host_fits(gpu.node):
                            continue
                        why = mig_join_refusal(gpu, policy, security)
                        if why is None:
                            best = (fit[1], gpu, fit[0], kind)
                            break
                        if not blocked:
                            blocked.append(why)
            if best is not None:
                break
        if best is None:
            for model in request.models:
                fresh = self._fresh_gpu((model,), halls)
                kind = CATALOG[model].mig_profiles[profile]
                fit = best_start(EMPTY, kind)
                if fresh is not None and fit is not None:
                    best = (fit[1], fresh, fit[0], kind)
                    break
        if best is None:
            return None
        _, gpu, start, kind = best
        return gpu, start, kind

    def _soft(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        share = request.share
        if share is None or share.mode not in SOFT_SHARING:
            return None
        why = may_join_soft_gpu(policy, None)
        if why is not None:
            blocked.append(why)
            return None
        best = self._soft_gpu(request, share, policy, halls)
        if best is None:
            return None
        self.state.set_soft(best, policy.tenant_id, share.mode, share.milli)
        node = best.node
        device = Device(node.id, node.hostname, best.index, best.uuid, share_milli=share.milli)
        return self._placement(request, policy, node.model, [device])

    def _soft_gpu(self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]) -> GpuSlot | None:
        if self.policy == "fragmentation":
            return self._scored_soft_gpu(request, share, policy, halls)
        return self._best_fit_soft_gpu(request, share, policy, halls)

    def _scored_soft_gpu(
        self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]
    ) -> GpuSlot | None:
        """The tenant's own shared GPU (of this mode) where the share raises the expected fragmentation least: the
        room a share leaves is worth what the tenant's own shares of that mode can use of it, nobody else may
        (``PoolView.soft_usable``). Up to 32 share levels per pool, fullest first; ties towards the fullest GPU.
        A fresh GPU, the one whose node and pool the score prefers, only when none of the tenant's fits: joining
        takes nothing anyone else could use, a fresh GPU takes a whole one from everybody (which a thin
        histogram, with no whole-GPU requests in it yet, would not price)."""
        owner = (policy.tenant_id, share.mode)
        best: tuple[tuple[float, int, int], GpuSlot] | None = None
        for rank, model in enumerate(request.models):
            for hall in halls:
                pool = self.state.soft_pools.get((policy.tenant_id, share.mode, model, hall))
                if pool is None:
                    continue
                view = self._view((model, hall))
                top = bisect_right(pool.levels, FULL_SHARE - share.milli)
                for used in reversed(pool.levels[max(0, top - LEVEL_SCAN) : top]):
                    room = FULL_SHARE - used
                    score = view.soft_fragmentation(owner, room - share.milli) - view.soft_fragmentation(owner, room)
                    key = (round(score / EPSILON) * EPSILON, -used, rank)
                    if best is None or key < best[0]:
                        gpu = next((g for g in pool.by_used[used].values() if self._host_fits(g.node)), None)
                        if gpu is not None:
                            best = (key, gpu)
        if best is not None:
            return best[1]
        left = FULL_SHARE - share.milli
        found = self._scored_node(
            request.models,
            halls,
            1,
            leaves=lambda view: view.soft_fragmentation(owner, left),
            buckets_of=self._fresh_buckets,
            room=left,
        )
        return next(g for g in found[1].gpus if g.free) if found is not None else None

    def _best_fit_soft_gpu(
        self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]
    ) -> GpuSlot | None:
        """The tenant's own shared GPU of this mode with the least room that still fits, else a fresh GPU."""
        best: GpuSlot | None = None
        for model in request.models:
            for hall in halls:
                pool = self.state.soft_pools.get((policy.tenant_id, share.mode, model, hall))
                gpu = pool.fullest_fitting(FULL_SHARE - share.milli, self._host_fits) if pool else None
                if gpu is not None and (best is None or gpu.soft_used > best.soft_used):
                    best = gpu
        return best if best is not None else self._fresh_gpu(request.models, halls)
