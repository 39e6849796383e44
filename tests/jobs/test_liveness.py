"""Liveness: each worker records itself in job_workers and beats its row; its jobs' rows are not written to keep them.

A job held by a worker that stops beating comes back within its lease (the reaper);
a worker that beats never loses a job to another because of a lock it holds itself.
"""

import logging
import os
import re
import signal
import socket
import threading
import time

import psycopg

import jobs
from jobs.store import schema
from jobs.web import html
from tests.jobs.helpers import exited, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS

STARTED = "CREATE TABLE IF NOT EXISTS started (job bigint, attempt int)"


def database_ms(db) -> int:
    return scalar(db, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint")


def test_a_job_locking_its_own_row_costs_no_job_of_its_worker_its_claim(db, connect, database_url):
    """The heartbeat writes the worker's row, never the jobs': a row lock the worker's own job holds cannot stall it.

    Two jobs run side by side on one worker, one of them holding its own row locked (as
    a failed neighbour's settlement did inside an open group); the other runs for three
    leases while a second worker polls the queue. It must run once.
    """
    db.execute(STARTED)
    db.execute("TRUNCATE started")
    release = threading.Event()

    def locker(conn, args):
        conn.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (jobs.current_job().id,))
        release.wait(30)

    def long(conn, args):
        with psycopg.connect(database_url, autocommit=True) as own:
            own.execute("INSERT INTO started VALUES (%s, %s)", (jobs.current_job().id, jobs.current_job().attempt))
        release.wait(30)

    performers = {"locker": locker, "long": long}
    lease = 1.0
    first = jobs.worker(connect, "default", performers, threads=2, lease=lease, poll=0.1)
    second = None
    try:
        jobs.later(db, "default", "locker", {})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs WHERE attempts = 1") == 1, "the locker to start")
        job = jobs.later(db, "default", "long", {})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM started") == 1, "the long job to start")
        second = jobs.worker(connect, "default", performers, threads=1, lease=lease, poll=0.1)
        until = database_ms(db) + 3 * lease * 1000  # three leases: the time the claim would have run out thrice
        wait_for(
            lambda: database_ms(db) > until or scalar(db, "SELECT count(*) FROM started") > 1,
            "three leases to pass, or the long job to start again",
        )
        assert db.execute("SELECT job, attempt FROM started").fetchall() == [(job, 1)], "the long job ran once"
    finally:
        release.set()
        for worker in (first, second):
            if worker is not None:
                worker.stop()
                worker.join(10)


def test_a_running_worker_has_a_row_that_its_heartbeat_moves_on_and_a_clean_stop_marks(db, connect):
    worker = jobs.worker(connect, ["default", "mail"], {}, threads=3, lease=1.0)
    try:
        row = wait_for(
            lambda: db.execute(
                "SELECT id, host, pid, queues, threads, version, started_at, beat_at, ended_at FROM job_workers"
            ).fetchone(),
            "the worker's row",
        )
        assert row[1:6] == (socket.gethostname(), os.getpid(), ["default", "mail"], 3, schema.VERSION)
        assert row[8] is None
        beat = row[7]
        wait_for(
            lambda: scalar(db, "SELECT beat_at FROM job_workers WHERE id = %s", (row[0],)) > beat,
            "the heartbeat to beat again",
        )
    finally:
        worker.stop()
        assert worker.join(10)
    ended = db.execute("SELECT ended_at, ending FROM job_workers WHERE id = %s", (row[0],)).fetchone()
    assert ended[0] is not None and ended[1] == "stopped"


def test_the_claim_records_which_worker_holds_the_job(db, connect):
    release = threading.Event()
    worker = jobs.worker(connect, "default", {"held": lambda conn, args: release.wait(10)})
    try:
        job = jobs.later(db, "default", "held", {})
        wait_for(lambda: scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the claim")
        assert scalar(db, "SELECT worker FROM jobs WHERE id = %s", (job,)) == worker.id
        assert scalar(db, "SELECT id FROM job_workers") == worker.id
    finally:
        release.set()
        worker.stop()
        worker.join(10)


def test_the_job_of_a_killed_worker_comes_back_within_its_lease_of_the_last_beat(db, database_url):
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    lease = 3.0
    first = start_worker(database_url, "default", "--lease", str(lease))
    second = None
    try:
        job = jobs.later(db, "default", "slow_first_time", {"seconds": 60})
        wait_for(lambda: scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the first claim")
        second = jobs.worker(
            lambda: psycopg.connect(database_url), "default", {"slow_first_time": slow_again}, lease=lease, poll=0.1
        )
        first.send_signal(signal.SIGKILL)
        first.wait()
        last_beat = scalar(db, "SELECT beat_at FROM job_workers WHERE pid = %s", (first.pid,))
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 0, "the job to come back and run", timeout=20)
        came_back = scalar(db, "SELECT min(at) FROM came_back")
        assert came_back - last_beat <= lease * 1000 + 500, "back within a lease of the last beat (and a poll)"
        assert scalar(db, "SELECT ending FROM job_workers WHERE pid = %s", (first.pid,)) == "silent"
    finally:
        stopped(first)
        if second is not None:
            second.stop()
            second.join(10)
    assert db.execute("SELECT job, attempt FROM runs").fetchall() == [(job, 2)]


def slow_again(conn, args):
    """The second attempt of slow_first_time, in this process: notes when it began, then records its run."""
    conn.execute("CREATE TABLE IF NOT EXISTS came_back (at bigint)")
    conn.execute("INSERT INTO came_back SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint")
    conn.execute(
        "INSERT INTO runs (job, pid, attempt) VALUES (%s, %s, %s)",
        (jobs.current_job().id, os.getpid(), jobs.current_job().attempt),
    )


LISTENER_LATE = 1.0  # seconds the listener's first connection is held back, ten of the worker's polls


def test_a_worker_started_while_its_queue_is_paused_claims_nothing_from_it(db, connect):
    """However late the listener's first poll: here its connection takes a second to open."""
    jobs.paused(db, "default")
    job = jobs.later(db, "default", "noop", {})
    ran = []

    def slow_for_the_listener():
        if threading.current_thread().name == "jobs-listener":
            time.sleep(LISTENER_LATE)  # the fault injected, not a wait: the listener's connection opens late
        return connect()

    worker = jobs.worker(
        slow_for_the_listener, "default", {"noop": lambda conn, args: ran.append(1)}, threads=2, poll=0.1
    )
    try:
        wait_for(lambda: worker.paused == {"default"}, "the worker to read the paused queues")
        assert db.execute("SELECT attempts FROM jobs WHERE id = %s", (job,)).fetchone() == (0,), "never claimed"
        jobs.resumed(db, "default")
        wait_for(lambda: ran, "the job to run once the queue is resumed")
    finally:
        worker.stop()
        worker.join(10)


def test_sigterm_marks_the_worker_process_row_stopped(db, database_url):
    db.execute(STARTS)
    process = start_worker(database_url, "default")
    row = wait_for(
        lambda: db.execute("SELECT id FROM job_workers WHERE pid = %s", (process.pid,)).fetchone(), "the worker's row"
    )
    process.send_signal(signal.SIGTERM)
    output = exited(process)
    assert process.returncode == 0, output
    assert scalar(db, "SELECT ending FROM job_workers WHERE id = %s", row) == "stopped"


def test_workers_gone_over_an_hour_ago_are_pruned_by_the_reaper(db, connect):
    now = jobs.now_ms()
    db.execute(
        "INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at, "
        "ended_at, ending) VALUES (1, 'old', 1, '{default}', 1, 30000, 1, %s, %s, %s, 'stopped'), "
        "(2, 'recent', 2, '{default}', 1, 30000, 1, %s, %s, %s, 'stopped')",
        (now - 7_300_000, now - 7_200_000, now - 7_200_000, now - 60_000, now - 60_000, now - 60_000),
    )
    worker = jobs.worker(connect, "default", {}, lease=1.0)
    try:
        wait_for(lambda: scalar(db, "SELECT count(*) FROM job_workers WHERE host = 'old'") == 0, "the old row pruned")
        assert scalar(db, "SELECT count(*) FROM job_workers WHERE host = 'recent'") == 1
    finally:
        worker.stop()
        worker.join(10)


def test_a_worker_taken_for_gone_while_it_lives_takes_its_row_back(db, connect, caplog):
    caplog.set_level(logging.WARNING, logger="jobs")
    worker = jobs.worker(connect, "default", {}, lease=1.0)
    try:
        wait_for(lambda: scalar(db, "SELECT count(*) FROM job_workers WHERE ended_at IS NULL") == 1, "the row")
        db.execute("UPDATE job_workers SET ended_at = %s, ending = 'silent'", (jobs.now_ms(),))  # as a reaper does
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM job_workers WHERE ended_at IS NULL") == 1,
            "the heartbeat to take the row back",
        )
        # the row is back once its statement commits; the line that says so follows it
        wait_for(lambda: "taken for gone" in caplog.text, "the worker to say it was taken for gone")
    finally:
        worker.stop()
        worker.join(10)


def test_the_workers_page_and_command_list_the_working_and_the_recently_gone(db, connect, database_url):
    from werkzeug.test import Client

    import jobs.web
    from tests.jobs.test_cli import cli

    gone = jobs.worker(connect, "mail", {})
    wait_for(lambda: scalar(db, "SELECT count(*) FROM job_workers") == 1, "the first worker's row")
    gone.stop()
    assert gone.join(10)
    release = threading.Event()
    working = jobs.worker(connect, ["default", "mail"], {"held": lambda conn, args: release.wait(10)}, threads=2)
    try:
        job = jobs.later(db, "default", "held", {})
        wait_for(lambda: scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the claim")
        page = Client(jobs.web.app(connect, development=True)).get("/workers")
        assert page.status_code == 200
        rows = re.findall(r"<tr>(.*?)</tr>", page.text)[1:]
        cells = [
            [
                (label, re.sub(r"<[^>]*>", "", text))
                for label, text in re.findall(r'data-label="([^"]+)">(.*?)</td>', row)
            ]
            for row in rows
        ]  # a cell's text, inside its link or not (Holding links to the jobs the worker holds)
        shown = [re.sub(r"<[^>]*>", "", html.short_id(worker.id)) for worker in (working, gone)]
        assert [dict(row)["Worker"] for row in cells] == shown, "the last digits of each id"
        assert f'<span title="{working.id}">' in page.text, "the whole id on hover"
        assert dict(cells[0])["Queues"] == "default, mail" and dict(cells[0])["State"] == "working"
        assert dict(cells[0])["Holding"] == "1" and dict(cells[0])["Host"] == socket.gethostname()
        assert dict(cells[1])["State"].startswith("stopped at ")
        job_page = Client(jobs.web.app(connect, development=True)).get(f"/job/{job}")
        assert f"worker={working.id}" in job_page.text
        listed = cli(database_url, "workers")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0].split()[:4] == ["WORKER", "HOST", "PID", "QUEUES"]
        assert lines[1].split()[:4] == [str(working.id), socket.gethostname(), str(os.getpid()), "default,mail"]
        assert lines[1].split()[-2:] == ["working", "1"] and lines[2].split()[-2:] == ["stopped", "0"]
    finally:
        release.set()
        working.stop()
        working.join(10)
