"""A limit per key (limits.py): a limited queue lets that many jobs of one concurrency key be in work at once."""

import re

import psycopg
import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import claims, limits
from jobs.store.claims import Hold
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.test_cli import cli
from tests.jobs.test_limits import MOST_AT_ONCE, SPANS
from tests.jobs.test_processes import worker_connections
from tests.jobs.test_web import OPERATOR, operator

PER_KEY = 2  # jobs of one key in work at once, in the tests of several worker processes
# MOST_AT_ONCE, for the spans of one key
MOST_OF_A_KEY = """
SELECT max((SELECT count(*) FROM spans AS other
    WHERE other.key = span.key AND other.began <= span.began AND span.began < other.ended))
FROM spans AS span WHERE span.key = %s
"""


def keyed(db, keys):
    """Queues a job of each key in `keys` (None: no key), in that order; answers their ids."""
    with db.transaction():
        return [jobs.later(db, "mail", "note", {"n": n}, key=key) for n, key in enumerate(keys)]


def claimed_ids(db):
    """One limited claim of "mail": the ids it took."""
    return [job.id for job in limits.claimed(db, "mail", hold=Hold(lease=60)).jobs]


def test_a_limit_per_key_takes_that_many_of_a_key_each_in_a_slot_of_its_own_then_passes_over_it(db):
    first, second, third, other = keyed(db, ["a", "a", "a", "b"])
    jobs.limited(db, "mail", per_key=PER_KEY)
    assert [claimed_ids(db) for _ in range(4)] == [[first], [second], [other], []]
    slots = db.execute("SELECT id, key_slot FROM jobs WHERE claim IS NOT NULL ORDER BY id").fetchall()
    assert slots == [(first, 0), (second, 1), (other, 0)]
    claims.finished(db, limits.claimed(db, "mail").jobs)  # nothing: the key is at its limit, and b's one is taken
    db.execute("DELETE FROM jobs WHERE id = %s", (first,))  # its job ended: slot 0 of a is free
    assert claimed_ids(db) == [third]
    assert scalar(db, "SELECT key_slot FROM jobs WHERE id = %s", (third,)) == 0


def test_without_a_limit_per_key_a_limited_queue_keeps_one_job_of_a_key_in_work(db):
    first, _, other = keyed(db, ["a", "a", "b"])
    jobs.limited(db, "mail", concurrency=10)
    assert [claimed_ids(db) for _ in range(3)] == [[first], [other], []]


def test_the_plain_claim_takes_slot_0_whatever_slot_a_limited_claim_left(db):
    first, second = keyed(db, ["a", "a"])
    jobs.limited(db, "mail", per_key=PER_KEY)
    assert [claimed_ids(db) for _ in range(2)] == [[first], [second]]
    db.execute("DELETE FROM jobs WHERE id = %s", (first,))
    db.execute("UPDATE jobs SET claim = NULL, attempts = 0, run_at = 0 WHERE id = %s", (second,))  # given back
    jobs.unlimited(db, "mail")
    assert [job.id for job in claims.claimed(db, "mail", limit=10)] == [second]
    assert scalar(db, "SELECT key_slot FROM jobs WHERE id = %s", (second,)) == 0


def test_two_jobs_of_a_key_in_one_slot_are_refused(db):
    first, second = keyed(db, ["a", "a"])
    db.execute("UPDATE jobs SET claim = 1 WHERE id = %s", (first,))
    with pytest.raises(psycopg.errors.UniqueViolation, match="jobs_key_slot_in_work"):
        db.execute("UPDATE jobs SET claim = 2 WHERE id = %s", (second,))


@pytest.mark.parametrize("per_key", [0, -1, 2.5, True, limits.PER_KEY_MAX + 1])
def test_a_limit_per_key_that_makes_no_sense_is_refused_and_changes_nothing(db, per_key):
    jobs.limited(db, "mail", per_key=3)
    with pytest.raises(ValueError, match=re.escape(f"a limit per key is 1 to {limits.PER_KEY_MAX} jobs of a key")):
        jobs.limited(db, "mail", per_key=per_key)
    assert db.execute("SELECT per_key FROM job_limits").fetchall() == [(3,)]


def test_four_processes_keep_at_most_the_limit_of_each_key_in_work_and_reach_it(runs, database_url):
    runs.execute(SPANS)
    jobs.limited(runs, "mail", per_key=PER_KEY)
    workers = [start_worker(database_url, "mail", "--threads", "4") for _ in range(4)]
    try:
        wait_for(lambda: worker_connections(runs) == 4 * (4 + 2), "four workers with six connections each")
        with runs.transaction():
            for n in range(36):
                jobs.later(runs, "mail", "span", {"seconds": 0.1}, key=f"account-{n % 3}")
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM spans") == 36, "every job", timeout=30)
    finally:
        outputs = [stopped(worker) for worker in workers]
    most = {key: scalar(runs, MOST_OF_A_KEY, (key,)) for key in ("account-0", "account-1", "account-2")}
    assert most == dict.fromkeys(most, PER_KEY)  # never more of a key, and each reached it: keys pass each other
    assert scalar(runs, MOST_AT_ONCE) > PER_KEY
    assert all(worker.returncode == 0 for worker in workers), outputs


def test_status_the_command_the_queues_page_and_the_metrics_say_the_limit_per_key(db, connect, database_url):
    keyed(db, ["a"])
    jobs.limited(db, "mail", concurrency=3, per_key=PER_KEY)
    [mail] = jobs.status(db)
    assert mail["limit_per_key"] == PER_KEY
    assert cli(database_url, "status").stdout.splitlines()[1].endswith("3 at once (0 in work), 2 a key          0")
    app = jobs.web.app(connect, authorize=operator)
    page = Client(app).get("/", environ_base=OPERATOR).text
    assert '<td data-label="Limit">3 at once (0 in work), 2 a key</td>' in page
    metrics = Client(app).get("/metrics", environ_base=OPERATOR).text.splitlines()
    assert 'jobs_limit{queue="mail",kind="per_key"} 2' in metrics


def test_a_claim_that_knows_no_limit_per_key_yet_keeps_one_job_of_a_key_in_work(db):
    first, _, other = keyed(db, ["a", "a", "b"])
    read_before = jobs.limited(db, "mail", concurrency=10)  # a worker's last read of the queue's limit
    jobs.limited(db, "mail", concurrency=10, per_key=PER_KEY)
    taken = [limits.claimed(db, "mail", known=read_before, hold=Hold(lease=60)).jobs for _ in range(3)]
    assert [[job.id for job in jobs_taken] for jobs_taken in taken] == [[first], [other], []]
