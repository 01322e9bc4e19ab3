"""On PostgreSQL, make the audit table append-only: UPDATE, DELETE and TRUNCATE raise an error.

Other databases (the embedded SQLite default) rely on the hash chain alone, which ``audit_verify`` checks.
"""

from typing import Any

from django.db import migrations

TABLE = "compliance_auditevent"

INSTALL = f"""
CREATE OR REPLACE FUNCTION ladder_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit log is append-only: % on {TABLE} refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_event_no_update_delete
    BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION ladder_audit_append_only();
CREATE TRIGGER audit_event_no_truncate
    BEFORE TRUNCATE ON {TABLE}
    FOR EACH STATEMENT EXECUTE FUNCTION ladder_audit_append_only();
"""

REMOVE = f"""
DROP TRIGGER IF EXISTS audit_event_no_truncate ON {TABLE};
DROP TRIGGER IF EXISTS audit_event_no_update_delete ON {TABLE};
DROP FUNCTION IF EXISTS ladder_audit_append_only();
"""


def install(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        # params=None: no placeholder parsing, so RAISE's '%' reaches PL/pgSQL and the statements run as one batch.
        schema_editor.execute(INSTALL, params=None)


def remove(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REMOVE, params=None)


class Migration(migrations.Migration):
    dependencies = [("compliance", "0001_initial")]

    operations = [migrations.RunPython(install, remove)]
