"""PostgreSQL: a notification on the channel ``flakeboard_rows`` for each statement that
changes suites or tokens (ledger/changes.py). Every column of a token but ``last_used_at``
(written at most once a minute while the token is used): a column added to the token must
join the list. Nothing on SQLite, whose ``PRAGMA data_version`` tells the same."""

from django.db import migrations

TOKEN_COLUMNS = ("suite_id", "name", "scope", "prefix", "digest", "created_at", "created_by",
                 "revoked_at", "expires_at")
CREATE = f"""
CREATE OR REPLACE FUNCTION flakeboard_rows_changed() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('flakeboard_rows', TG_TABLE_NAME);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER flakeboard_suite_rows AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON ledger_suite FOR EACH STATEMENT EXECUTE FUNCTION flakeboard_rows_changed();
CREATE TRIGGER flakeboard_apitoken_rows
    AFTER UPDATE OF {", ".join(TOKEN_COLUMNS)} OR DELETE OR TRUNCATE
    ON ledger_apitoken FOR EACH STATEMENT EXECUTE FUNCTION flakeboard_rows_changed();
"""
DROP = """
DROP TRIGGER IF EXISTS flakeboard_apitoken_rows ON ledger_apitoken;
DROP TRIGGER IF EXISTS flakeboard_suite_rows ON ledger_suite;
DROP FUNCTION IF EXISTS flakeboard_rows_changed();
"""


def run(sql):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return operation


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0015_suite_new_test_policy"),
    ]

    operations = [
        migrations.RunPython(run(CREATE), run(DROP), elidable=False),
    ]
