"""What ``ladder launch`` shows before it asks: what will run where, both isolation promises in Ladder's own words
(the offerings carry them, as the portal's launch page says them), the price per hour and the budget left.

Pure: it reads a request body and the plain JSON of ``/api/v1/offerings`` and ``/api/v1/budget``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

NOT_PRICED = "not priced"
SERVERLESS = "serverless"
JOB = "job"


def performance_of(body: Mapping[str, Any]) -> str:
    """The performance isolation the request's shape asks for."""
    if "mig_profile" in body:
        return "mig"
    if "share" in body:
        return str(body["share"]["mode"])
    return "whole_gpu"


def _plural(count: int | Decimal, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def shape(body: Mapping[str, Any]) -> str:
    """How much of what, in words: ``a gang of 2 members x 8 whole GPUs (16 GPUs), all or nothing``."""
    if "nodes" in body:
        what = f"{_plural(body['nodes'], 'whole node')} (every GPU of each)"
    elif "mig_profile" in body:
        what = f"a MIG slice {body['mig_profile']}"
    elif "share" in body:
        what = f"{body['share']['fraction']} of one GPU ({body['share']['mode']})"
    else:
        what = _plural(body.get("gpus", 1), "whole GPU")
    host = [f"{body[key]} {unit}" for key, unit in (("cpu", "vCPUs"), ("memory_gib", "GiB")) if key in body]
    if host:
        what += f" with {' and '.join(host)}"
    gang = body.get("gang")
    if not gang:
        return what
    members = f"a gang of {gang['size']} members x {what}"
    if "gpus" in body:
        members += f" ({gang['size'] * body['gpus']} GPUs)"
    topology = " in one NVLink domain" if gang.get("topology") == "nvlink" else ""
    return f"{members}, started together{topology}, all or nothing"


def unit_and_count(body: Mapping[str, Any]) -> tuple[str, Decimal, str]:
    """The price's unit (as the offerings key it), how many of it the request holds, and its noun."""
    members = Decimal((body.get("gang") or {}).get("size", 1))
    if "nodes" in body:
        return "node", Decimal(body["nodes"]), "node"
    if "mig_profile" in body:
        return f"mig:{body['mig_profile']}", members, "slice"
    if "share" in body:
        return "gpu", Decimal(str(body["share"]["fraction"])), "GPU"
    return "gpu", Decimal(body.get("gpus", 1)) * members, "GPU"


def candidates(body: Mapping[str, Any], offerings: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The offerings the request may land on: its rung, one of its models, one of its regions (if it names any)."""
    models = body.get("gpu_models") or [body.get("gpu_model")]
    regions = body.get("regions")
    return [
        row
        for row in offerings
        if row["rung"] == body["rung"] and row["gpu_model"] in models and (not regions or row["region"] in regions)
    ]


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.01'))}"


def _unit_price(value: Decimal) -> str:
    text = f"{value.normalize():f}"
    return text if "." in text and len(text.split(".")[1]) >= 2 else f"{value.quantize(Decimal('0.01'))}"


ON_DEMAND = "on_demand"


def capacity_class(body: Mapping[str, Any]) -> str:
    return str(body.get("capacity_class") or ON_DEMAND)


def _class_row(row: Mapping[str, Any], klass: str) -> Mapping[str, Any]:
    """An offering's row for one capacity class (its prices, discount and promise); empty: not sold that way. A
    server that does not give classes gives its on-demand prices only."""
    found: Mapping[str, Any] = next((c for c in row.get("classes") or [] if c.get("capacity_class") == klass), {})
    if not found and klass == ON_DEMAND and "classes" not in row:
        return {"prices": row.get("prices") or {}}
    return found


def host_beyond(body: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[Decimal, str] | None:
    """What the vCPUs and memory the request asks beyond the offering's bundle cost an hour, all members, and them
    in words (``(0, "")``: nothing beyond); None when the offering does not sell what it asks beyond the bundle."""
    host = row.get("host")
    asked = body.get("cpu"), body.get("memory_gib")
    if not host or asked == (None, None):
        return Decimal(0), ""
    gpus = body.get("gpus")
    bundle = (
        (host["cpu_per_gpu"] * gpus, host["memory_gib_per_gpu"] * gpus)
        if gpus
        else (host["cpu_per_slice"], host["memory_gib_per_slice"])
    )
    members = Decimal((body.get("gang") or {}).get("size", 1))
    cost, words = Decimal(0), []
    for unit, noun, want, sold in (("vcpu", "vCPUs", asked[0], bundle[0]), ("memory", "GiB", asked[1], bundle[1])):
        beyond = max(0, (want or 0) - sold)
        if not beyond:
            continue
        per = (host.get("prices") or {}).get(unit)
        if per is None:
            return None
        cost += Decimal(str(per)) * beyond * members
        words.append(f"{beyond * members} {noun}")
    return cost, " and ".join(words)


def price(body: Mapping[str, Any], offerings: Sequence[Mapping[str, Any]], klass: str | None = None) -> str:
    """The price per hour where it may land, in its capacity class (``klass``, default the request's): one
    figure, or each place's when they differ; ``not priced`` when no price is in force there. vCPUs and memory
    asked beyond the bundle are added at the region's price (``host_beyond``)."""
    unit, count, noun = unit_and_count(body)
    klass = klass or capacity_class(body)
    quotes = []
    for row in candidates(body, offerings):
        each = (_class_row(row, klass).get("prices") or {}).get(unit)
        beyond = host_beyond(body, row)
        if each is not None and beyond is not None:
            currency = str(row.get("currency") or "").upper()
            quotes.append((row, Decimal(str(each)), currency, beyond))
    if not quotes:
        return NOT_PRICED
    idle = "; nothing while it idles at zero" if body["rung"] == SERVERLESS else ""
    totals = {(each * count + extra, currency) for _, each, currency, (extra, _) in quotes}
    if len(totals) == 1:
        _, each, currency, (extra, what) = quotes[0]
        per = f"{count.normalize():f} x {_unit_price(each)} {currency} per {noun}-hour"
        if extra:
            per += f", and {_unit_price(extra)} {currency} for {what} beyond the bundle"
        return f"{_money(each * count + extra)} {currency} an hour ({per}){idle}"
    places = ", ".join(
        f"{_money(each * count + extra)} {currency} on {row['gpu_model']} in {row['region']}"
        for row, each, currency, (extra, _) in quotes
    )
    return f"an hour, by where it lands: {places}{idle}"


def capacity(body: Mapping[str, Any], offerings: Sequence[Mapping[str, Any]]) -> str | None:
    """How it is bought and what that promises; spot work says what becomes of it when preempted. None: the
    offerings say nothing of classes (a server before them)."""
    klass = capacity_class(body)
    rows = candidates(body, offerings)
    if not any("classes" in row for row in rows):
        return None
    found: Mapping[str, Any] = next((c for row in rows if (c := _class_row(row, klass))), {})
    said = f"{found.get('title', klass)}: {found.get('promise', 'not sold where it may land now.')}"
    if klass == "spot":
        then = "requeued from its checkpoint" if body.get("on_preemption") == "requeue" else "stopped"
        said += f" When preempted, it is {then}."
    return said


def other_prices(body: Mapping[str, Any], offerings: Sequence[Mapping[str, Any]]) -> str | None:
    """What the same launch costs in the other capacity classes sold where it may land; None: none is."""
    sold = {c["capacity_class"]: c for row in candidates(body, offerings) for c in row.get("classes") or []}
    said = []
    for klass, found in sold.items():
        if klass == capacity_class(body):
            continue
        if found.get("terms"):  # reserved: its work costs nothing; a reservation costs this per GPU-hour
            terms = ", ".join(
                f"{t['days']} days {_unit_price(Decimal(str(t['price_per_gpu_hour'])))}" for t in found["terms"]
            )
            said.append(f"{found.get('title', klass)}, a reservation per GPU-hour by term: {terms}")
            continue
        if price(body, offerings, klass) == NOT_PRICED:
            continue
        off = f", {Decimal(str(found['discount_pct'])).normalize():f}% off" if found.get("discount_pct") else ""
        said.append(f"{found.get('title', klass)}{off}: {price(body, offerings, klass)}")
    return "; ".join(said) or None


def promises(body: Mapping[str, Any], offerings: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """Both isolation promises in words: how the GPU is shared, what separates this tenant from others."""
    performance = performance_of(body)
    rows = [row for row in offerings if row["rung"] == body["rung"]]
    if not rows:
        return performance, f"the {body['rung']} rung's (it is not offered now)"
    words = rows[0].get("performance_words") or {}
    return str(words.get(performance, performance)), str(rows[0].get("security_words") or rows[0]["security_isolation"])


def budget(status: Mapping[str, Any] | None) -> str:
    """This month's budget left, in words; None: the caller may not see it."""
    if status is None:
        return "not shown to your role"
    if status.get("monthly") is None:
        return "no budget set"
    monthly, spend = Decimal(str(status["monthly"])), Decimal(str(status["spend"]))
    currency = str(status.get("currency") or "").upper()
    hard = bool(status.get("hard_stop"))
    if spend >= monthly:
        stop = "; its hard stop refuses new work" if hard else ""
        return f"used up: {_money(spend)} {currency} spent of {_money(monthly)} this month{stop}"
    stop = " (hard stop: new work is refused once it is used up)" if hard else ""
    return f"{_money(monthly - spend)} {currency} left of {_money(monthly)} this month{stop}"


def _ports(ports: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{p['port']}/{p.get('protocol', 'http')} {p.get('expose', 'none')}" for p in ports)


def _volumes(volumes: Sequence[Mapping[str, Any]]) -> str:
    said = []
    for volume in volumes:
        if "volume" in volume:
            what = f"volume {volume['volume']}" + (", read-only" if volume.get("read_only") else "")
        elif "dataset" in volume:
            what = f"dataset {volume['dataset']}, read-only"
        else:
            what = f"{volume.get('scratch_gb')} GB scratch"
        said.append(f"{volume['mount_path']} ({what})")
    return ", ".join(said)


def plan(
    body: Mapping[str, Any],
    offerings: Sequence[Mapping[str, Any]],
    budget_status: Mapping[str, Any] | None,
    source: str,
    written: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """The plan, one ``(label, value)`` line each; ``written`` is the task file's data, whose volumes are named as
    the file names them."""
    workload: Mapping[str, Any] = body.get("workload") or {}
    models = body.get("gpu_models") or [body.get("gpu_model")]
    regions = body.get("regions")
    performance, security = promises(body, offerings)
    rows: list[tuple[str, str]] = [
        ("Launch", f"{body['name']} (from {source})"),
        ("Rung", str(body["rung"])),
        ("Shape", shape(body)),
        ("GPU model", ", else ".join(map(str, models))),
        ("Regions", ", ".join(regions) if regions else "any your residency allows"),
    ]
    if "image" in workload:
        rows.append(("Image", str(workload["image"])))
    if "os_image" in workload:
        rows.append(("OS image", str(workload["os_image"])))
    argv = [*workload.get("command", []), *workload.get("args", [])]
    if argv:
        rows.append(("Command", shlex.join(argv)))
    if body["rung"] == JOB:
        rows.append(("Framework", str(workload.get("framework", "torchrun (the default)"))))
    if workload.get("checkpoint"):
        every = workload["checkpoint"].get("interval_s", 600)
        rows.append(("Checkpoint", f"{workload['checkpoint'].get('path', '/checkpoints')} every {every} s"))
    if workload.get("ports"):
        rows.append(("Ports", _ports(workload["ports"])))
    said = written or workload  # names as the file writes them (ids in the body)
    if said.get("volumes"):
        rows.append(("Volumes", _volumes(said["volumes"])))
    if workload.get("secrets"):
        rows.append(("Secrets", ", ".join(f"{s['name']} ({s.get('as', 'env')})" for s in workload["secrets"])))
    if said.get("ssh_keys"):
        rows.append(("SSH keys", ", ".join(map(str, said["ssh_keys"]))))
    if not workload:
        rows.append(("Workload", "none: the capacity only"))
    rows += [
        ("Performance", performance),
        ("Security", security),
    ]
    bought = capacity(body, offerings)
    if bought is not None:
        rows.append(("Capacity", bought))
    rows.append(("Price", price(body, offerings)))
    others = other_prices(body, offerings)
    if others:
        rows.append(("Or", others))
    rows.append(("Budget", budget(budget_status)))
    return rows
