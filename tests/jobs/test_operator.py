"""What an operator does reaches the workers: a paused queue is left alone, a cancelled job in work stops counting."""

import signal

import jobs
from tests.jobs.helpers import exited, scalar, start_command, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS


def test_workers_claim_nothing_from_a_paused_queue_until_it_is_resumed(db, connect):
    ran = []
    performers = {"note": lambda conn, args: ran.append(args["queue"])}
    worker = jobs.worker(connect, ["paused", "open"], performers, poll=0.1)
    try:
        jobs.paused(db, "paused")
        wait_for(lambda: worker.paused == {"paused"}, "the worker to hear of the pause")
        jobs.later(db, "paused", "note", {"queue": "paused"})
        jobs.later(db, "open", "note", {"queue": "open"})
        wait_for(lambda: ran == ["open"], "the job of the open queue, claimed after the paused one would have been")
        assert scalar(db, "SELECT count(*) FROM jobs WHERE queue = 'paused' AND claim IS NULL") == 1
        jobs.resumed(db, "paused")
        wait_for(lambda: ran == ["open", "paused"], "the paused queue's job, once it is resumed")
    finally:
        worker.stop()
        worker.join(10)


def test_a_job_cancelled_while_it_runs_goes_on_the_shelf_at_once_and_never_counts(db, database_url):
    for made in (RUNS, STARTS):
        db.execute(made)
    db.execute("TRUNCATE runs, starts")
    worker = start_worker(database_url, "default", "--grace", "1")
    try:
        job = jobs.later(db, "default", "started_then_held", {"seconds": 30, "record": True})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM starts") == 1, "the job to start")
        cancel = start_command(database_url, "cancel", str(job))
        assert cancel.wait(30) == 0
        shelf = wait_for(lambda: jobs.failed(db), "the cancelled job on the shelf", timeout=10)
        assert [(j["id"], j["failure"]) for j in shelf] == [(job, "cancelled")]
        worker.send_signal(signal.SIGTERM)  # its performer ignores the cancel; the grace ends it
        output = exited(worker, timeout=40)
    finally:
        stopped(worker)
    assert worker.returncode == 0, output
    assert f"job {job} (started_then_held on default) was cancelled while in hand" in output
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(job, "cancelled")], "not retried, not given back"
    assert scalar(db, "SELECT count(*) FROM runs") == 0, "nothing it wrote counts"
