"""The guestbook's tables: made in numbered steps, and a start beside a current schema locks nothing."""

import psycopg
import pytest

import jobs
from guestbook import db as guestbook_db

TABLES = ("accounts", "entries", "client_tries", "sessions")  # the guestbook's own tables


def test_a_start_beside_an_open_transaction_on_accounts_waits_for_nothing(app, connect):
    request = connect()  # a request's transaction, still open, that wrote to accounts
    request.execute("INSERT INTO accounts (email, password_digest) VALUES ('ada@example.com', 'x')")
    try:
        with connect() as starting:
            starting.autocommit = True
            starting.execute("SET lock_timeout = '500ms'")  # a lock it waited for would raise, not hang
            guestbook_db.prepared(starting)
    finally:
        request.rollback()
        request.close()


def test_prepared_on_a_current_schema_locks_none_of_the_guestbooks_tables(app, connect):
    with connect() as conn:
        with conn.transaction():  # the locks it took are held until this ends
            guestbook_db.prepared(conn)
            locked = conn.execute(
                "SELECT relation::regclass::text FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'"
            ).fetchall()
    assert not {name for (name,) in locked} & set(TABLES)


def test_tables_an_earlier_version_made_without_a_record_are_brought_up_to_date(app, db):
    db.execute("DROP TABLE guestbook_schema")  # as before the record existed, when every start ran the file
    db.execute("ALTER TABLE accounts DROP COLUMN display_name")

    guestbook_db.prepared(db)

    assert guestbook_db.TABLES.version(db) == guestbook_db.TABLES.needed
    columns = db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'accounts'").fetchall()
    assert "display_name" in {name for (name,) in columns}


def test_a_role_that_may_not_change_the_tables_is_told_what_to_run(app, db, database_url):
    db.execute("DROP TABLE guestbook_schema")  # a step is due
    db.execute("DROP ROLE IF EXISTS guestbook_reader")
    db.execute("CREATE ROLE guestbook_reader LOGIN")
    db.execute("GRANT USAGE ON SCHEMA public TO guestbook_reader")
    db.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO guestbook_reader")
    try:
        reader = psycopg.conninfo.make_conninfo(database_url, user="guestbook_reader")
        with psycopg.connect(reader, autocommit=True) as conn, pytest.raises(jobs.SchemaError) as refused:
            guestbook_db.prepared(conn)
        assert "the guestbook tables are at version 0" in str(refused.value)
        assert "as their owner" in str(refused.value)
    finally:
        db.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM guestbook_reader")
        db.execute("REVOKE USAGE ON SCHEMA public FROM guestbook_reader")
        db.execute("DROP ROLE guestbook_reader")
        guestbook_db.prepared(db)
