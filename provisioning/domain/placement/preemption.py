"""Preemption: placing a request that does not fit by taking back preemptible (spot) work, at the least cost.

``PreemptingPlacement.place_preempting`` (mixed into the engine) first places the request as ``place`` would.
Only when that is refused for capacity, and only for a class that may preempt
(``provisioning.domain.capacity_classes``), does it look at the candidates it is handed, each a preemptible
allocation's whole placement (a gang's every member: preempted whole or not at all):

1. **Enough.** Inside a ``FleetState.trial``, the candidates holding devices where the request may go (its models
   in the halls it may use) are ordered cheapest first (the goodput each would lose: its work since its last
   checkpoint, then the one freeing the most devices there). If releasing them all leaves no room, that is the
   answer; otherwise the shortest run of the cheapest that makes room is found by binary search (releasing more
   never leaves less room).
2. **No more than needed.** Each released candidate, the most costly first, is put back if the request still fits
   without it. What is left are the victims: none of them could be spared (their total cost is not guaranteed to be
   the least of every set, which is a knapsack; the cheapest-first order and the pruning keep it close).
3. **For real.** The trial is undone, the victims are released and the request is placed: the same decision the
   trial found, since the state and its indexes' order are as they were.

Reserved work goes through this twice: on its reservation's own nodes (placing, then preempting the spot work
borrowing them), and only then on the rest of the pool (docs/capacity.md, "Reservations in the engine").

The request is placed by the engine's own rules throughout (isolation, residency, quota, gangs, NVLink), so
preempting never crosses them; a candidate whose release does not help is never a victim. No candidate fits even
with all of them released: the engine's refusal, the state untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from provisioning.domain.capacity_classes import CLASSES, CapacityClass
from provisioning.domain.placement.decision import Placement, Refused, Request
from provisioning.domain.placement.isolation import Reason, Refusal, TenantPolicy

if TYPE_CHECKING:
    from provisioning.domain.placement.state import FleetState


@dataclass(frozen=True)
class Victim:
    """A preemptible allocation as the engine holds it, and what preempting it would lose."""

    allocation_id: int
    placement: Placement
    capacity_class: CapacityClass
    cost_ms: int  # goodput lost if preempted now: its work since its last checkpoint (all of it without one)


@dataclass(frozen=True)
class Preempting:
    """The request placed, once the victims are released (the engine has done both)."""

    placement: Placement
    victims: tuple[Victim, ...]

    @property
    def cost_ms(self) -> int:
        return sum(v.cost_ms for v in self.victims)


class PreemptingPlacement:
    """The engine's preempting entry point (mixed into ``PlacementEngine``, which provides the rest)."""

    state: FleetState

    if TYPE_CHECKING:  # the engine's, which this is mixed into
        _keep_own: bool

        def _place(
            self, request: Request, policy: TenantPolicy, quota_milli: int | None, *, observe: bool, reach: str = ...
        ) -> Placement | Refused: ...

        def apply(self, placement: Placement) -> None: ...

        def _halls(self, request: Request, policy: TenantPolicy) -> tuple[list[str], list[Refusal]]: ...

        def _drawn(
            self, request: Request, policy: TenantPolicy, halls: list[str]
        ) -> tuple[Request, list[str]] | Refusal: ...

        def release(self, placement: Placement) -> None: ...

    def place_preempting(
        self,
        request: Request,
        policy: TenantPolicy,
        *,
        capacity_class: CapacityClass,
        candidates: Sequence[Victim] | Callable[[], Sequence[Victim]],
        quota_milli: int | None = None,
    ) -> Placement | Preempting | Refused:
        """Place the request, preempting some of ``candidates`` if it fits no other way (see the module). The
        candidates may be given as a function, called only when preempting is needed (finding their cost may
        take a read the common case should not pay for)."""
        reserved = request.reservation is not None
        reaches = ("home", "pool") if reserved else ("any",)
        first: Refused | None = None
        checked = False
        # Reserved work: first keeping what its own reservation's next large request needs, then as it can.
        for keep_own in (True, False) if reserved else (False,):
            self._keep_own = keep_own
            try:
                for reach in reaches:
                    # Reserved work: its own nodes, then taking them back from spot work, before the rest of the pool.
                    found = self._place(request, policy, quota_milli, observe=first is None, reach=reach)
                    if isinstance(found, Placement) or not CLASSES[capacity_class].preempts:
                        return found
                    if not any(r.code is Reason.NO_CAPACITY for r in found.reasons):
                        return found  # refused for a rule, not for room: preempting would not change it
                    first = first or found
                    if callable(candidates) or not checked:
                        candidates, checked = self._checked(candidates() if callable(candidates) else candidates), True
                    if not candidates:
                        continue
                    preempting = self._preempting(request, policy, quota_milli, candidates, reach)
                    if preempting is not None:
                        return preempting
            finally:
                self._keep_own = False
        return first if first is not None else Refused(())

    @staticmethod
    def _checked(candidates: Sequence[Victim]) -> Sequence[Victim]:
        for candidate in candidates:
            if not CLASSES[candidate.capacity_class].preemptible:
                raise ValueError(f"allocation {candidate.allocation_id} is {candidate.capacity_class}: not preemptible")
        return candidates

    def _preempting(
        self,
        request: Request,
        policy: TenantPolicy,
        quota_milli: int | None,
        candidates: Sequence[Victim],
        reach: str,
    ) -> Preempting | None:
        """The request placed by preempting some of ``candidates``, or None (the state untouched)."""
        victims = self._victims(request, policy, quota_milli, candidates, reach)
        if victims is None:
            return None
        for victim in victims:
            self.release(victim.placement)
        placed = self._place(request, policy, quota_milli, observe=False, reach=reach)  # observed above
        if not isinstance(placed, Placement):  # the trial found room: the same state gives the same decision
            for victim in victims:
                self.apply(victim.placement)
            return None
        return Preempting(placed, victims)

    def _fits(self, request: Request, policy: TenantPolicy, quota_milli: int | None, reach: str) -> bool:
        """Whether the request fits now; the state left as it was."""
        trial = self._place(request, policy, quota_milli, observe=False, reach=reach)
        if isinstance(trial, Placement):
            self.release(trial)
            return True
        return False

    def _victims(
        self,
        request: Request,
        policy: TenantPolicy,
        quota_milli: int | None,
        candidates: Sequence[Victim],
        reach: str = "any",
    ) -> tuple[Victim, ...] | None:
        """The candidates to preempt, or None when releasing them all would not make room."""
        pools = self._request_pools(request, policy)
        state = self.state
        home: set[int] | None = None
        if reach == "home" and request.reservation is not None and len(pools) == 1:
            (pool,) = pools
            home = {node.id for node in state.homes(pool).get(request.reservation, ())}

        def freed(victim: Victim) -> int:  # the devices it frees where the request may go
            model = victim.placement.model
            if home is not None:
                return sum(1 for d in victim.placement.devices if d.node_id in home)
            return sum(1 for d in victim.placement.devices if (model, state.nodes[d.node_id].hall.code) in pools)

        # Only candidates holding devices where the request may go can help.
        helpful = [(c, freed(c)) for c in candidates]
        cheapest = sorted(
            ((c, n) for c, n in helpful if n), key=lambda cn: (cn[0].cost_ms, -cn[1], cn[0].allocation_id)
        )
        order = [c for c, _ in cheapest]
        released = order[:]  # all of them first: when even that leaves no room, one look says so
        with self.state.trial():
            try:
                for candidate in order:
                    self.release(candidate.placement)
                if not self._fits(request, policy, quota_milli, reach):
                    return None
                # The fewest of the cheapest that make room: releasing more never leaves less, so a binary search
                # over how many (each step putting back or taking out the difference).
                low, high = 0, len(order)  # high always fits
                while low < high:
                    middle = (low + high) // 2
                    self._released_first(order, len(released), middle)
                    released = order[:middle]
                    if self._fits(request, policy, quota_milli, reach):
                        high = middle
                    else:
                        low = middle + 1
                self._released_first(order, len(released), high)
                released = order[:high]
                needed = list(released)
                for candidate in sorted(released, key=lambda v: (-v.cost_ms, v.allocation_id)):
                    self.apply(candidate.placement)
                    if self._fits(request, policy, quota_milli, reach):
                        needed.remove(candidate)  # spared: it stays put
                    else:
                        self.release(candidate.placement)
                released = needed
                return tuple(sorted(needed, key=lambda v: v.allocation_id))
            finally:
                for candidate in released:  # the trial's look undone: every candidate holds its devices again
                    self.apply(candidate.placement)

    def _released_first(self, order: list[Victim], now: int, wanted: int) -> None:
        """From the first ``now`` of ``order`` released to the first ``wanted``."""
        for candidate in order[wanted:now]:
            self.apply(candidate.placement)
        for candidate in order[now:wanted]:
            self.release(candidate.placement)

    def _request_pools(self, request: Request, policy: TenantPolicy) -> set[tuple[str, str]]:
        """The (model, hall) pools the request may be placed in."""
        halls, _ = self._halls(request, policy)
        if request.reservation is not None:
            drawn = self._drawn(request, policy, halls)
            if isinstance(drawn, Refusal):
                return set()
            request, halls = drawn
        return {(model, hall) for model in request.models for hall in halls}
