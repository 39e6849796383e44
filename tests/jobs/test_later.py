"""Queueing: a job is written on the caller's transaction, and bad arguments write nothing."""

import math

import pytest

import jobs
from jobs.store import claims
from tests.jobs.helpers import scalar


def test_job_queued_in_a_rolled_back_transaction_never_exists(db, connect):
    with connect() as other:
        jobs.later(other, "default", "greet", {"name": "Bo"})
        other.rollback()
        jobs.later(other, "default", "greet", {"name": "Ada"})
        other.commit()
    assert [j["args"] for j in jobs.listed(db)] == [{"name": "Ada"}]


def test_job_committed_on_one_connection_is_worked_on_another(db, connect):
    seen = []
    with connect() as writer:
        jobs.later(writer, "default", "greet", {"name": "Ada"})
        assert jobs.worked(db, "default", {"greet": lambda _, args: seen.append(args)}) is None
        writer.commit()
    assert jobs.worked(db, "default", {"greet": lambda _, args: seen.append(args)}) == "ran greet"
    assert seen == [{"name": "Ada"}]


def test_a_record_and_its_job_commit_or_vanish_together(db, connect):
    db.execute("CREATE TABLE IF NOT EXISTS orders (id int)")
    db.execute("TRUNCATE orders")
    with connect() as conn:
        with pytest.raises(RuntimeError):
            with conn.transaction():
                conn.execute("INSERT INTO orders VALUES (1)")
                jobs.later(conn, "default", "receipt", {"order": 1})
                raise RuntimeError("the order fails after its job was queued")
    assert scalar(db, "SELECT count(*) FROM orders") == 0
    assert jobs.listed(db) == []


class Opaque:
    pass


REFUSED = [
    ("", "greet", {}, ValueError, "queue"),
    ("default", "", {}, ValueError, "name"),
    ("default", "  ", {}, ValueError, "name"),
    (None, "greet", {}, ValueError, "queue"),
    ("default", "greet", ["not", "a", "dict"], TypeError, "must be a dict"),
    ("default", "greet", {"data": b"bytes"}, TypeError, "bytes"),
    ("default", "greet", {"tags": {"a", "b"}}, TypeError, "set"),
    ("default", "greet", {"thing": Opaque()}, TypeError, "Opaque"),
    ("default", "greet", {"n": math.nan}, ValueError, "nan"),
    ("default", "greet", {"n": math.inf}, ValueError, "inf"),
    ("default", "greet", {"text": "a\x00b"}, ValueError, "NUL"),
    ("default", "greet", {"deep": [{"text": "\x00"}]}, ValueError, "NUL"),
    ("default", "greet", {1: "one"}, TypeError, "not a string"),
    ("default", "greet", {"nested": {2: "two"}}, TypeError, "not a string"),
    ("default", "greet", {"pair": (1, 2)}, TypeError, "tuple"),
]


@pytest.mark.parametrize("queue, name, args, error, words", REFUSED)
def test_bad_arguments_are_refused_clearly_and_nothing_is_written(db, queue, name, args, error, words):
    with pytest.raises(error, match=words):
        jobs.later(db, queue, name, args)
    assert jobs.listed(db) == []


def test_a_refusal_names_the_job(db):
    with pytest.raises(TypeError, match="'send_invoice'"):
        jobs.later(db, "default", "send_invoice", {"file": b"%PDF"})


def test_plain_json_arguments_come_back_unchanged(db):
    args = {"name": "Zoë", "n": 3, "x": 1.5, "ok": True, "none": None, "list": [1, "two", {"three": 3}]}
    jobs.later(db, "default", "greet", args)
    assert jobs.listed(db)[0]["args"] == args


def test_a_claim_reads_the_arguments_back_as_they_were_queued(db):
    args = {"name": "Zoë 🙂", "quote": 'a "b" \\ c\n\u2028', "big": 2**62, "x": -1.5e-7, "list": [1, None, {"k": []}]}
    jobs.later(db, "default", "greet", args)
    [job] = claims.claimed(db, "default", limit=5)
    assert job.args == args


def test_many_jobs_queued_at_once_run_like_any_other(db):
    assert jobs.later_many(db, "default", "greet", [{"n": n} for n in range(500)]) == 500
    seen = []
    while jobs.worked(db, "default", {"greet": lambda _, args: seen.append(args["n"])}):
        pass
    assert seen == list(range(500))


def test_one_bad_dict_among_many_refuses_them_all(db):
    with pytest.raises(TypeError, match="'greet'"):
        jobs.later_many(db, "default", "greet", [{"n": 1}, {"n": b"2"}, {"n": 3}])
    assert jobs.listed(db) == []


def test_many_jobs_queued_in_a_rolled_back_transaction_never_exist(db, connect):
    with connect() as conn:
        jobs.later_many(conn, "default", "greet", [{"n": 1}, {"n": 2}])
        conn.rollback()
    assert jobs.listed(db) == []
