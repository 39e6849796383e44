"""The failed shelf through the API: reading jobs that failed for good, retrying and discarding them."""

import threading

import pytest

import jobs
from jobs.store import claims
from jobs.store.claims import Hold
from tests.jobs.helpers import scalar, wait_for

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch


@jobs.policy(attempts=2, backoff=jobs.intervals(5))
def broken(db, args):
    raise RuntimeError(f"it broke on attempt {jobs.current_job().attempt}")


@jobs.policy(attempts=1)
def doomed(db, args):
    raise RuntimeError("doomed")


def fine(db, args):
    pass


PERFORMERS = {"broken": broken, "doomed": doomed, "fine": fine}
MENDED = {"broken": fine, "doomed": fine, "fine": fine}  # the same jobs once their bug is fixed


def shelved(db, queue="default", **options) -> int:
    """Queues a `broken` job and works it at T and T + 5 s, when it fails for good; returns its id."""
    job = jobs.later(db, queue, "broken", {}, T, **options)
    assert job is not None, "queued"
    for moment in (T, T + 5000):
        outcome = jobs.worked(db, queue, PERFORMERS, moment)
        assert outcome and outcome.startswith("failed broken"), outcome
    return job


def test_failed_lists_jobs_that_failed_for_good_with_every_reason_and_the_traceback(db):
    job = shelved(db)
    jobs.later(db, "default", "fine", {}, T + 60_000)  # waiting: not on the shelf
    jobs.later(db, "default", "broken", {}, T + 60_000)
    jobs.worked(db, "default", PERFORMERS, T + 60_000)  # failed once, to be retried: not on the shelf
    (failure,) = jobs.failed(db)
    assert failure | {"traceback": None} == {
        "id": job,
        "queue": "default",
        "name": "broken",
        "args": {},
        "attempts": 2,
        "failed_at": T + 5000,
        "failure": "it broke on attempt 2",
        "traceback": None,
        "reasons": ["it broke on attempt 1", "it broke on attempt 2"],
        "retries": None,  # never retried from the shelf
    }
    assert "RuntimeError: it broke on attempt 2" in failure["traceback"]


def test_failed_takes_one_queue_or_every_queue_newest_first(db):
    mail = shelved(db, "mail")
    default = shelved(db, "default")
    assert [j["id"] for j in jobs.failed(db)] == [default, mail]
    assert [j["id"] for j in jobs.failed(db, "mail")] == [mail]
    assert jobs.failed(db, "elsewhere") == []


def test_a_job_whose_worker_died_on_its_last_attempt_is_in_work_until_reaped_onto_the_shelf(db):
    job = jobs.later(db, "default", "fine", {}, T)
    db.execute("UPDATE jobs SET max_attempts = 1")  # its one attempt is its last
    claims.claimed(db, "default", T, hold=Hold(lease=30))  # the claim of a worker that dies at once
    after_the_lease = T + 31_000
    assert jobs.failed(db) == []
    assert [(q["in_work"], q["failed"]) for q in jobs.status(db, now=after_the_lease)] == [(1, 0)]
    claims.reaped(db, after_the_lease)  # what any worker's heartbeat does
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(job, "its worker stopped during the last attempt")]
    assert [(q["in_work"], q["failed"]) for q in jobs.status(db, now=after_the_lease)] == [(0, 1)]


def test_a_retried_job_is_due_at_once_with_its_attempts_counted_from_nothing(db):
    job = shelved(db)
    assert jobs.retried(db, job, now=T + 9000) == 1
    (row,) = jobs.listed(db)
    assert (row["run_at"], row["attempts"], row["max_attempts"]) == (T + 9000, 0, jobs.ATTEMPTS)
    assert row["reasons"] == ["it broke on attempt 1", "it broke on attempt 2"], "its reasons stay"
    assert jobs.failed(db) == []
    assert jobs.worked(db, "default", MENDED, T + 9000) == "ran broken"
    assert jobs.listed(db) == []


def test_a_retried_job_that_fails_again_gets_its_policy_s_attempts_and_keeps_every_reason(db):
    job = shelved(db)
    jobs.retried(db, job, now=T + 9000)
    assert jobs.worked(db, "default", PERFORMERS, T + 9000) == "failed broken on attempt 1: it broke on attempt 1"
    assert jobs.worked(db, "default", PERFORMERS, T + 14_000) == "failed broken on attempt 2: it broke on attempt 2"
    (failure,) = jobs.failed(db)
    assert len(failure["reasons"]) == 4


def test_a_retried_job_wakes_an_idle_worker_at_once(db, connect):
    job = shelved(db)
    ran = threading.Event()
    worker = jobs.worker(connect, "default", {"broken": lambda *_: ran.set()}, poll=60)
    try:
        idle = """SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
            AND application_name = 'jobs tests' AND state = 'idle'
            AND (query = 'LISTEN jobs' OR query LIKE '%%SET scheduled = false%%'
                 OR query LIKE '%%FOR UPDATE SKIP LOCKED%%' OR query LIKE '%%job_paused_queues%%'
                 OR query LIKE '%%job_workers%%' OR query LIKE '%%job_limits%%' OR query LIKE '%%job_pulse%%'
                 OR query LIKE '%%pg_stat_activity%%' OR query LIKE '%%SELECT priority, run_at, id%%')"""
        # the listener (its last chore may be any of them: pauses, limits, the pulse), the heartbeat and the
        # work thread
        wait_for(lambda: scalar(db, idle) == 3, "the worker to listen, look once and find nothing due")
        jobs.retried(db, job)
        assert ran.wait(10), "a worker that looks every 60 s ran the job within 10 s: it was woken"
    finally:
        worker.stop()
        worker.join(10)


def test_retried_counts_the_jobs_it_put_back_and_leaves_jobs_off_the_shelf_alone(db):
    first, second, third = shelved(db), shelved(db), shelved(db)
    waiting = jobs.later(db, "default", "fine", {}, T + 60_000)
    assert jobs.retried(db, first, now=T) == 1
    assert jobs.retried(db, first, waiting, 999, now=T) == 0
    assert jobs.retried(db, every=True, now=T) == 2
    assert [(j["id"], j["attempts"], j["run_at"]) for j in jobs.listed(db)] == [
        (first, 0, T),
        (second, 0, T),
        (third, 0, T),
        (waiting, 0, T + 60_000),
    ]


UNCLEAR = [
    ((), {}, ValueError, "every=True"),
    ((1,), {"every": True}, ValueError, "not both"),
    ((None,), {}, TypeError, "None"),
    (("7",), {}, TypeError, "'7'"),
    ((True,), {}, TypeError, "True"),
]


@pytest.mark.parametrize("operation", [jobs.retried, jobs.discarded])
@pytest.mark.parametrize("ids, options, error, words", UNCLEAR)
def test_shelf_operations_refuse_an_unclear_choice_of_jobs_and_change_nothing(
    db, operation, ids, options, error, words
):
    job = shelved(db)
    with pytest.raises(error, match=words):
        operation(db, *ids, **options)
    assert [j["id"] for j in jobs.failed(db)] == [job]


def test_a_failed_job_stays_on_the_shelf_while_another_job_holds_its_unique_key(db):
    job = shelved(db, unique="sync:1")
    holder = jobs.later(db, "default", "fine", {}, T + 9000, unique="sync:1")
    assert holder is not None, "a job failed for good no longer holds its unique key"
    assert jobs.retried(db, job, now=T + 9000) == 0
    assert jobs.retried(db, every=True, now=T + 9000) == 0
    assert [j["id"] for j in jobs.failed(db)] == [job]
    assert jobs.worked(db, "default", MENDED, T + 9000) == "ran fine"
    assert jobs.retried(db, job, now=T + 9000) == 1, "the key is free again once its holder has run"


def test_of_failed_jobs_sharing_a_unique_key_only_the_oldest_comes_back(db):
    older = shelved(db, unique="sync:1")
    newer = shelved(db, unique="sync:1")
    other = shelved(db, unique="sync:2")
    assert jobs.retried(db, every=True, now=T + 9000) == 2
    assert [j["id"] for j in jobs.failed(db)] == [newer]
    assert {j["id"] for j in jobs.listed(db) if j["attempts"] == 0} == {older, other}


def test_a_unique_key_taken_while_a_retry_runs_leaves_the_job_on_the_shelf_without_an_error(db, connect):
    job = shelved(db, unique="sync:1")
    answers = []
    with connect() as rival, connect() as retrying:
        retrying.autocommit = True
        jobs.later(rival, "default", "fine", {}, T, unique="sync:1")  # not committed yet
        thread = threading.Thread(target=lambda: answers.append(jobs.retried(retrying, job, now=T)))
        thread.start()
        # the retry passed its own check, and now waits on the unique index for the rival
        wait_for(
            lambda: scalar(
                db,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event = 'transactionid'",
            ),
            "the retry to wait on the rival's transaction",
        )
        rival.commit()
        thread.join(10)
    assert answers == [0]
    assert [j["id"] for j in jobs.failed(db)] == [job]


def test_a_retried_job_of_a_batch_leaves_it_so_the_batch_counts_each_job_once(db):
    callbacks = {"on_failure": ("fine", {"callback": "on_failure"}), "always": ("fine", {"callback": "always"})}
    batch = jobs.batch(db, "default", [("doomed", {}), ("fine", {})], **callbacks)
    doomed = jobs.listed(db)[0]["id"]
    assert jobs.worked(db, "default", PERFORMERS).startswith("failed doomed")
    assert jobs.retried(db, doomed, now=0) == 1  # due before the rest of the batch
    assert jobs.worked(db, "default", MENDED) == "ran doomed"
    assert jobs.batch_status(db, batch)["pending"] == 1, "the batch counted the failure, not the success after it"
    ran = []
    while jobs.worked(db, "default", {"fine": lambda _, args: ran.append(args)}):
        pass
    assert ran == [{}, {"callback": "on_failure"}, {"callback": "always"}]
    assert jobs.batch_status(db, batch) | {"id": None} == {
        "id": None,
        "total": 2,
        "pending": 0,
        "failed": 1,
        "cancelled": 0,
        "finished": True,
        "cancelling": False,
    }


def test_discarded_deletes_jobs_from_the_shelf_and_nothing_else(db):
    first, second = shelved(db), shelved(db)
    waiting = jobs.later(db, "default", "fine", {}, T + 60_000)
    assert jobs.discarded(db, first, waiting, 999) == 1
    assert jobs.discarded(db, first) == 0
    assert jobs.discarded(db, every=True) == 1
    assert [j["id"] for j in jobs.listed(db)] == [waiting]
    assert second not in [j["id"] for j in jobs.listed(db)]


def test_failed_pages_the_shelf_newest_first_by_keyset(db):
    ids = [shelved(db, "mail" if n % 2 else "default") for n in range(5)]  # default, mail, default, mail, default
    assert [j["id"] for j in jobs.failed(db, limit=2)] == ids[:2:-1][:2] == [ids[4], ids[3]]
    assert [j["id"] for j in jobs.failed(db, limit=2, after=ids[3])] == [ids[2], ids[1]]
    assert [j["id"] for j in jobs.failed(db, limit=2, after=ids[1])] == [ids[0]]
    assert jobs.failed(db, after=ids[0]) == []
    assert [j["id"] for j in jobs.failed(db, "default", limit=2, after=ids[4])] == [ids[2], ids[0]]


def test_a_job_failing_between_two_pages_neither_hides_nor_repeats_one(db):
    ids = [shelved(db) for _ in range(4)]
    first = jobs.failed(db, limit=2)
    newcomer = shelved(db)
    second = jobs.failed(db, limit=2, after=first[-1]["id"])
    assert [j["id"] for j in first + second] == [ids[3], ids[2], ids[1], ids[0]]
    assert jobs.failed(db, limit=1)[0]["id"] == newcomer


def test_failed_holds_at_most_a_page_unless_asked(db):
    jobs.later_many(db, "default", "doomed", [{}] * (jobs.PAGE + 1), T)
    db.execute("UPDATE jobs SET max_attempts = 0")  # all on the shelf
    assert len(jobs.failed(db)) == jobs.PAGE == 50
    assert len(jobs.failed(db, limit=jobs.PAGE + 10)) == jobs.PAGE + 1


@pytest.mark.parametrize(
    "options, error",
    [
        ({"limit": 0}, ValueError),
        ({"limit": -1}, ValueError),
        ({"limit": "5"}, ValueError),
        ({"limit": True}, ValueError),
        ({"after": "7"}, TypeError),
        ({"after": 1.5}, TypeError),
    ],
)
def test_failed_refuses_a_page_it_cannot_read(db, options, error):
    shelved(db)
    with pytest.raises(error):
        jobs.failed(db, **options)


def transactions_of(db, ids) -> int:
    """How many transactions last wrote the rows of `ids` (rows written together share their xmin)."""
    return scalar(db, "SELECT count(DISTINCT xmin::text) FROM jobs WHERE id = ANY(%s)", (ids,))


def test_retrying_the_whole_shelf_commits_a_batch_at_a_time(db, monkeypatch):
    monkeypatch.setattr(jobs.store.shelf, "SHELF_BATCH", 2)
    ids = [shelved(db) for _ in range(5)]
    assert jobs.retried(db, every=True, now=T) == 5
    assert transactions_of(db, ids) == 3, "batches of 2, 2 and 1, each its own transaction"
    assert [j["attempts"] for j in jobs.listed(db)] == [0] * 5


def test_discarding_the_whole_shelf_commits_a_batch_at_a_time(db, monkeypatch):
    monkeypatch.setattr(jobs.store.shelf, "SHELF_BATCH", 2)
    for _ in range(5):
        shelved(db)
    waiting = jobs.later(db, "default", "fine", {}, T + 60_000)
    db.execute("CREATE TEMP TABLE deletions (xact bigint)")
    db.execute("""CREATE FUNCTION pg_temp.noted() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO deletions VALUES (txid_current()); RETURN OLD; END $$""")
    db.execute("CREATE TRIGGER noted BEFORE DELETE ON jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.noted()")
    try:
        assert jobs.discarded(db, every=True) == 5
        assert scalar(db, "SELECT count(DISTINCT xact) FROM deletions") == 3
    finally:
        db.execute("DROP TRIGGER noted ON jobs")
    assert [j["id"] for j in jobs.listed(db)] == [waiting]


def test_retrying_the_whole_shelf_in_batches_of_one_still_brings_back_only_the_oldest_of_a_unique_key(db, monkeypatch):
    monkeypatch.setattr(jobs.store.shelf, "SHELF_BATCH", 1)
    older = shelved(db, unique="sync:1")
    newer = shelved(db, unique="sync:1")
    assert jobs.retried(db, every=True, now=T + 9000) == 1
    assert [j["id"] for j in jobs.failed(db)] == [newer]
    assert [j["id"] for j in jobs.listed(db) if j["attempts"] == 0] == [older]
