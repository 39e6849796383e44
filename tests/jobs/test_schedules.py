"""Schedules: one job per tick across workers and processes, missed ticks, changed and removed schedules."""

import threading
from datetime import UTC, datetime, timedelta, tzinfo

import pytest
from psycopg.rows import dict_row

import jobs
from jobs.store import schedules
from jobs.store.schedules import queries
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.performers import TICKS, performers
from tests.jobs.test_cli import cli
from tests.jobs.timetable import QUEUE, ticking

UTC = UTC
RACERS = 8  # connections firing one schedule at the same instant


@pytest.fixture
def ticks(db):
    """The table the tick performer records in, and job_schedules, both empty."""
    db.execute(TICKS)
    db.execute("TRUNCATE ticks, job_schedules")
    return db


def recorded(db, key):
    """The schedule's row, as the firing reads it."""
    return db.execute(
        "SELECT last_tick, created_at, fingerprint, definition FROM job_schedules WHERE key = %s", (key,)
    ).fetchone()


def began_ago(db, key, seconds):
    """Makes the schedule's row look first seen `seconds` ago, with no tick fired: a worker was down since."""
    db.execute(
        "UPDATE job_schedules SET created_at = now() - make_interval(secs => %s), last_tick = NULL WHERE key = %s",
        (seconds, key),
    )


def queued_ticks(db):
    """The moments (ms) the jobs waiting on the ticks queue are due at, in order."""
    return [job["run_at"] for job in jobs.listed(db, QUEUE)]


def database_now(db):
    return scalar(db, "SELECT now()")


def test_a_new_schedule_fires_nothing_from_before_it_was_first_seen(ticks):
    schedule = ticking("new", every=1)
    assert schedules.fired(ticks, [schedule]) == 0
    last_tick, created_at, fingerprint, definition = recorded(ticks, "new")
    assert last_tick is None and fingerprint == schedule.fingerprint and definition == "every 1 s"
    assert jobs.listed(ticks) == []


def test_a_due_tick_queues_one_job_due_at_its_moment_and_only_once(ticks):
    schedule = ticking("hourly", every=3600, missed="one")
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "hourly", 2 * 3600)
    latest = schedule.latest(database_now(ticks))
    assert schedules.fired(ticks, [schedule]) == 1
    assert schedules.fired(ticks, [schedule]) == 0
    assert queued_ticks(ticks) == [schedules.ms(latest)]
    assert recorded(ticks, "hourly")[0] == latest


def test_workers_firing_one_tick_at_the_same_instant_queue_one_job(ticks, connect):
    schedule = ticking("raced", every=3600, missed="one")
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "raced", 2 * 3600)
    barrier, counts = threading.Barrier(RACERS), []

    def racer():
        with connect() as db:
            db.autocommit = True
            barrier.wait()
            counts.append(schedules.fired(db, [schedule]))

    racers = [threading.Thread(target=racer) for _ in range(RACERS)]
    for thread in racers:
        thread.start()
    for thread in racers:
        thread.join()
    assert sorted(counts) == [0] * (RACERS - 1) + [1]
    assert len(queued_ticks(ticks)) == 1


def test_missed_ticks_after_downtime_queue_one_job_by_default(ticks):
    schedule = ticking("minutely", every=60, missed="one")
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "minutely", 3 * 3600)
    assert schedules.fired(ticks, [schedule]) == 1
    assert queued_ticks(ticks) == [schedules.ms(schedule.latest(database_now(ticks)))]


def test_missed_all_queues_one_job_per_missed_tick_up_to_the_cap(ticks):
    schedule = ticking("minutely", every=60, missed="all")
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "minutely", 3 * 3600)  # 180 ticks missed
    assert schedules.fired(ticks, [schedule]) == schedules.MISSED_ALL_MAX
    due = queued_ticks(ticks)
    assert due == [due[-1] - 60_000 * n for n in reversed(range(schedules.MISSED_ALL_MAX))]
    assert due[-1] == schedules.ms(recorded(ticks, "minutely")[0])


@pytest.mark.parametrize("missed, queued", [("skip", 0), ("one", 1)])
def test_missed_skip_queues_nothing_for_a_tick_long_past(ticks, missed, queued):
    five_minutes_ago = (database_now(ticks) - timedelta(minutes=5)).astimezone(UTC)
    schedule = ticking("late", cron=f"{five_minutes_ago.minute} * * * *", missed=missed)  # its tick: 5 min ago
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "late", 2 * 3600)
    assert schedules.fired(ticks, [schedule]) == queued
    assert len(queued_ticks(ticks)) == queued
    assert recorded(ticks, "late")[0] == schedule.latest(database_now(ticks))  # skipped, not left due
    assert schedules.fired(ticks, [schedule]) == 0


def test_a_changed_expression_does_not_fire_a_moment_already_fired(ticks):
    before = ticking("moved", every=3600, missed="one")  # every hour on the hour, UTC
    after = ticking("moved", cron="0 * * * *", missed="one")  # the same moments, written as cron
    schedules.fired(ticks, [before])
    began_ago(ticks, "moved", 2 * 3600)
    assert schedules.fired(ticks, [before]) == 1
    fired_tick = recorded(ticks, "moved")[0]
    assert schedules.fired(ticks, [after]) == 0 or after.latest(database_now(ticks)) > fired_tick  # an hour turned
    assert queued_ticks(ticks).count(schedules.ms(fired_tick)) == 1
    assert recorded(ticks, "moved")[2] == after.fingerprint


def test_two_versions_of_a_schedule_mid_deploy_fire_a_tick_once(ticks, connect):
    old = ticking("deployed", every=3600, missed="one")
    new = ticking("deployed", cron="0 * * * *", missed="one")  # the same hours, another definition
    schedules.fired(ticks, [old])
    began_ago(ticks, "deployed", 2 * 3600)
    # Both processes read the row before either fires: both see the same tick due.
    read = ticks.cursor(row_factory=dict_row).execute(queries["schedules_read"], {"keys": ["deployed"]}).fetchone()
    with connect() as other:
        other.autocommit = True
        assert schedules.tick_fired(other, new, read) == 1
    assert schedules.tick_fired(ticks, old, read) == 0
    assert len(queued_ticks(ticks)) == 1


def test_a_skipped_tick_on_time_fires_and_one_long_past_does_not():
    schedule = ticking("daily", cron="17 3 * * *", missed="skip")
    tick = datetime(2026, 12, 1, 3, 17, tzinfo=UTC)
    yesterday = tick - timedelta(days=1)
    assert schedule.due(yesterday, tick + timedelta(seconds=schedules.ON_TIME)) == ([tick], tick)
    assert schedule.due(yesterday, tick + timedelta(hours=6)) == ([], tick)
    assert schedule.due(tick, tick + timedelta(hours=6)) is None


def test_a_removed_schedule_stops_firing_and_the_kept_one_carries_on(ticks, connect):
    kept, removed = ticking("kept", every=1), ticking("removed", every=1)

    def count(key):
        return scalar(ticks, "SELECT count(*) FROM ticks WHERE schedule = %s", (key,))

    worker = jobs.worker(connect, [QUEUE], performers, schedules=[kept, removed])
    try:
        wait_for(lambda: count("kept") >= 2 and count("removed") >= 2, "both schedules to tick")
    finally:
        worker.stop()
        worker.join()
    last_removed, kept_before = recorded(ticks, "removed")[0], count("kept")
    worker = jobs.worker(connect, [QUEUE], performers, schedules=[kept])
    try:
        wait_for(lambda: count("kept") >= kept_before + 3, "the kept schedule to tick on")
        assert worker.wait_until_empty(timeout=10)
    finally:
        worker.stop()
        worker.join()
    assert recorded(ticks, "removed")[0] == last_removed
    latest_removed = scalar(ticks, "SELECT max(tick) FROM ticks WHERE schedule = 'removed'")
    assert latest_removed == schedules.ms(last_removed)


@pytest.mark.parametrize(
    "options, error, says",
    [
        ({"every": 1, "cron": "* * * * *"}, ValueError, "give either cron= or every=, not both"),
        ({}, ValueError, "give either cron= or every=, not neither"),
        ({"cron": "61 * * * *"}, ValueError, "schedule 'k': cron expression '61 * * * *': the minute field"),
        ({"every": 0.5}, ValueError, "every= must be 1 s or more"),
        ({"every": "30"}, TypeError, "every= is a timedelta or seconds, not str"),
        ({"every": 30, "tz": "Europe/Berlin"}, ValueError, "tz= is for cron expressions"),
        ({"cron": "@daily", "tz": "Mars/Olympus"}, ValueError, "unknown time zone 'Mars/Olympus'"),
        ({"cron": "@daily", "missed": "some"}, ValueError, "missed= is one of one, skip, all"),
        ({"cron": "@daily", "args": {"when": datetime(2026, 1, 1)}}, TypeError, "is a datetime, which is not JSON"),
        ({"cron": "@daily", "queue": ""}, ValueError, "schedule 'k': a job needs a queue"),
        ({"cron": "@daily", "priority": 40_000}, ValueError, "priority= is a whole number from -32768 to 32767"),
    ],
)
def test_a_bad_schedule_is_refused_naming_it(options, error, says):
    arguments = {"queue": "q", "name": "n", **options}
    with pytest.raises(error, match=says.replace("*", r"\*")):
        jobs.every("k", **arguments)


def test_a_worker_refuses_two_schedules_with_one_key(connect):
    with pytest.raises(ValueError, match="two schedules share the key 'twice'"):
        jobs.Worker(connect, [QUEUE], performers, schedules=[ticking("twice", every=1), ticking("twice", every=2)])


def test_the_command_line_lists_last_runs_and_with_the_code_next_runs(ticks, database_url):
    schedule = ticking("listed", every=3600, missed="one")
    schedules.fired(ticks, [schedule])
    began_ago(ticks, "listed", 2 * 3600)
    schedules.fired(ticks, [schedule])
    last = recorded(ticks, "listed")[0]
    plain = cli(database_url, "schedules")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0].split() == ["KEY", "SCHEDULE", "LAST", "RUN", "(UTC)", "LAST", "SEEN", "(UTC)"]
    assert plain.stdout.splitlines()[1].startswith(f"listed  every 3600 s  {last:%Y-%m-%d %H:%M:%S}")
    with_code = cli(database_url, "schedules", "--schedules", "tests.jobs.timetable:each_second")
    assert with_code.returncode == 0, with_code.stderr
    rows = {line.split()[0]: line for line in with_code.stdout.splitlines()[1:]}
    assert rows["listed"].endswith("not in the code")
    assert "every 1 s" in rows["each-second"] and "never" in rows["each-second"]


def worker_connections(db):
    return scalar(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'jobs worker'",
    )


def test_four_worker_processes_holding_a_one_second_schedule_queue_one_job_per_tick(ticks, database_url):
    """About 30 s: one worker restarts after 10 ticks, all four after 20; ticks missed meanwhile come back."""

    def start():
        return start_worker(database_url, QUEUE, "--schedules", "tests.jobs.timetable:each_second")

    def count():
        return scalar(ticks, "SELECT count(*) FROM ticks")

    workers = [start() for _ in range(4)]
    outputs = []
    try:
        wait_for(lambda: count() >= 10, "ten ticks", timeout=60)
        outputs.append(stopped(workers[0]))
        workers[0] = start()
        wait_for(lambda: count() >= 20, "twenty ticks", timeout=60)
        outputs += [stopped(worker) for worker in workers]  # no worker holds the schedule for a moment
        workers = [start() for _ in range(4)]
        wait_for(lambda: count() >= 30, "thirty ticks", timeout=60)
    finally:
        outputs += [stopped(worker) for worker in workers]
    while jobs.worked(ticks, QUEUE, performers) is not None:
        pass  # the jobs queued before the last workers stopped
    recorded_ticks = [row[0] for row in ticks.execute("SELECT tick FROM ticks ORDER BY tick")]
    assert len(recorded_ticks) == len(set(recorded_ticks)), "a tick ran twice"
    assert recorded_ticks == list(range(recorded_ticks[0], recorded_ticks[-1] + 1, 1000)), "a tick was lost"
    assert recorded_ticks[-1] == schedules.ms(recorded(ticks, "each-second")[0])
    assert all(worker.returncode == 0 for worker in workers), outputs


class BrokenZone(tzinfo):
    """A time zone whose offsets cannot be read, as a faulty tzinfo a schedule was given."""

    def utcoffset(self, moment):
        raise RuntimeError("this zone is broken")


def test_a_broken_schedule_is_logged_and_the_others_still_fire(ticks, caplog):
    broken = ticking("broken", cron="* * * * *", missed="one", tz=BrokenZone())
    sound = ticking("sound", every=3600, missed="one")
    schedules.fired(ticks, [broken, sound])
    began_ago(ticks, "sound", 2 * 3600)
    assert schedules.fired(ticks, [broken, sound]) == 1
    assert "schedule broken could not fire; the other schedules carry on" in caplog.text


def test_a_worker_beside_a_server_fires_the_schedules_it_is_handed(ticks, connect):
    def count():
        return scalar(ticks, "SELECT count(*) FROM ticks WHERE schedule = 'beside'")

    served = jobs.beside(
        connect,
        QUEUE,
        performers,
        lambda: wait_for(lambda: count() >= 2, "two ticks beside"),
        schedules=[ticking("beside", every=1)],
    )
    assert served is True
