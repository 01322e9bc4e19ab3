"""``manage.py billing_export --from YYYY-MM-DD --to YYYY-MM-DD [--tenant SLUG] [--detail] --format csv|parquet
--out FILE [--workers N]``: a signed FOCUS 1.2 export of the usage ledger (docs/finance.md, "Exports").

Exit codes: 0 written; 1 a worker process failed (its error printed); 2 bad arguments (a date, from after to, an
unknown tenant or format, --workers below 1); 3 the output cannot be written. Prints the rows, the rate, the
SHA-256 and where the signature went."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import Invalid
from core.forks import ForkedCallFailed
from lifecycle.services.exports import export_spec, export_workers, export_write


class Command(BaseCommand):
    help = (
        "Write a signed FinOps FOCUS 1.2 export of the usage ledger for UTC days --from to --to, both inclusive "
        "(one tenant with --tenant, else all; per allocation with --detail), as CSV or Parquet, with its "
        "signature in FILE.sig.json. Exit 2 for bad arguments, 3 when FILE cannot be written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="date_from", required=True, help="First UTC day, YYYY-MM-DD (inclusive).")
        parser.add_argument("--to", dest="date_to", required=True, help="Last UTC day, YYYY-MM-DD (inclusive).")
        parser.add_argument("--tenant", help="Only this tenant (its slug); default: every tenant.")
        parser.add_argument("--detail", action="store_true", help="One row per allocation x SKU x hour, with tags.")
        parser.add_argument("--format", dest="file_format", required=True, choices=["csv", "parquet"])
        parser.add_argument("--out", required=True, help="The file to write (its signature goes to FILE.sig.json).")
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="Processes writing the file (default LADDER_EXPORT_WORKERS; 0 or unset there: one per CPU).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            spec = export_spec(
                date_from=options["date_from"],
                date_to=options["date_to"],
                tenant=options["tenant"],
                detail=options["detail"],
                file_format=options["file_format"],
            )
        except Invalid as error:
            raise CommandError(f"--{error.field}: {error.detail}", returncode=2) from None
        workers = options["workers"] if options["workers"] is not None else export_workers()
        if workers < 1:
            raise CommandError("--workers: at least 1", returncode=2)
        out = Path(options["out"])
        if out.is_dir() or not out.parent.is_dir():
            raise CommandError(f"--out: cannot write {out}: not a file in an existing directory", returncode=3)
        started = time.perf_counter()
        try:
            signature = export_write(spec=spec, path=out, workers=workers)
        except OSError as error:
            raise CommandError(f"--out: cannot write {out}: {error.strerror or error}", returncode=3) from None
        except ForkedCallFailed as error:  # a worker's own error, e.g. "OSError: [Errno 28] No space left on device"
            raise CommandError(f"the export failed in a worker process: {error}", returncode=1) from None
        seconds = max(time.perf_counter() - started, 1e-9)
        rows = signature["rows"]
        self.stdout.write(
            f"{rows} rows in {seconds:.2f} s ({rows / seconds:,.0f} rows/s) to {out}\n"
            f"sha256 {signature['sha256']}; signature {out}.sig.json (key {signature['key_id']})"
        )
