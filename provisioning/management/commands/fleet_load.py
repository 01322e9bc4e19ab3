"""``manage.py fleet_load FILE.json``: load a fleet document (format in ``provisioning/domain/fleet_document.py``).

Prints the counts (on a terminal, the nodes loaded so far on stderr meanwhile: ``core/progress.py``). A document
with problems is refused whole: each reason goes to stderr on its own line as ``FILE:LINE: path: message`` and the
command exits 1 with nothing changed. A file that is not JSON is named with the line and column of the JSON error.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actor import Actor
from core.progress import Progress
from provisioning.domain.json_source import JsonSyntaxError, parse_text
from provisioning.services.fleet import FleetDocumentInvalid, fleet_load


class Command(BaseCommand):
    help = "Load a fleet document: upsert regions, halls, nodes and GPUs; refuse the whole file on any problem."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Path of the fleet document (JSON).")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["file"]
        try:
            with open(name, encoding="utf-8-sig") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"{name}: cannot read the file: {error}") from None
        try:
            document, source = parse_text(text)
        except JsonSyntaxError as error:
            raise CommandError(f"{name}:{error.line}:{error.column}: not valid JSON: {error.message}") from None
        try:
            progress = Progress(self.stderr, "loading nodes", unit="nodes")
            result = fleet_load(document=document, actor=Actor.system("fleet_load"), source=source, progress=progress)
        except FleetDocumentInvalid as refused:
            for reason in refused.reasons:
                line = f"{reason.line}:" if reason.line is not None else ""
                self.stderr.write(f"{name}:{line} {reason.where}: {reason.message}")
            raise CommandError(f"{name}: {refused.detail}") from None
        for kind, counts in result.as_dict().items():
            shown = ", ".join(f"{n} {what}" for what, n in counts.items())
            self.stdout.write(f"{kind.replace('_', ' ')}: {shown}")
