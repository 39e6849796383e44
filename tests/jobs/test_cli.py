"""The command line as a script meets it: `python -m jobs ...` as a process of its own, on DATABASE_URL."""

import os
import subprocess
import sys

import pytest

import jobs
from jobs.store.control import RUNNING_CANCELLED
from tests.jobs.helpers import PROJECT, WAIT
from tests.jobs.performers import doomed

T = 1_000_000  # the moment the tests work their queues at: 1970-01-01 00:16:40 UTC
SECRET = "s3cr3t-t0ken"


def cli(database_url, *args):
    """Runs `python -m jobs ARGS` on `database_url` (None: unset) and returns the finished process."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    env.pop("DATABASE_URL", None)
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    command = [sys.executable, "-m", "jobs", *args]
    return subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=WAIT)


def shelved(db, queue="default", args=None, unique=None) -> int:
    """Queues a job that fails for good on its first attempt, works it at T, and returns its id."""
    job = jobs.later(db, queue, "doomed", args or {}, T, unique=unique)
    assert job is not None, "queued"
    assert jobs.worked(db, queue, {"doomed": doomed}, T) == "failed doomed on attempt 1: doomed"
    return job


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["status"],
        ["failed"],
        ["retry"],
        ["discard"],
        ["work"],
        ["pause"],
        ["resume"],
        ["cancel"],
        ["schedules"],
        ["prepare"],
        ["workers"],
    ],
)
def test_every_command_explains_itself_with_help(command):
    answer = cli(None, *command, "--help")
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith(f"usage: {' '.join(['python -m jobs', *command])}")


def test_without_database_url_a_command_says_so_and_exits_2():
    answer = cli(None, "status")
    assert (answer.returncode, answer.stderr) == (2, "jobs: set DATABASE_URL to the database to work on\n")


WRONG = [
    ["retry"],
    ["retry", "1", "--all"],
    ["discard"],
    ["discard", "1", "--all"],
    ["retry", "seven"],
    ["status", "extra"],
    ["unheard_of"],
    ["failed", "--limit", "0"],
    ["failed", "--after", "x"],
    ["cancel"],
    ["cancel", "seven"],
    ["pause"],
    ["resume", "a", "b"],
    ["cancel", "99999999999999999999"],
    ["retry", "0"],
    ["discard", "-1"],
]


@pytest.mark.parametrize("command", WRONG)
def test_a_wrong_command_line_exits_2_and_changes_nothing(db, database_url, command):
    job = shelved(db)
    answer = cli(database_url, *command)
    assert answer.returncode == 2, answer.stdout
    assert "usage: python -m jobs" in answer.stderr
    assert [j["id"] for j in jobs.failed(db)] == [job]


def test_a_database_out_of_reach_exits_3():
    answer = cli("postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=5", "failed")
    assert answer.returncode == 3
    assert answer.stderr.startswith("jobs: the database failed:")


def test_status_prints_each_queue_s_figures_as_a_table(db, database_url):
    shelved(db)
    now = jobs.now_ms()
    jobs.later(db, "default", "note", {}, now - 90_000)
    jobs.later(db, "default", "note", {}, now + 3_600_000)
    jobs.later(db, "mail", "note", {}, now + 3_600_000)
    answer = cli(database_url, "status")
    assert (answer.returncode, answer.stdout) == (
        0,
        (
            "QUEUE    DUE  SCHEDULED  IN WORK  FAILED  OLDEST DUE  PAUSED\n"
            "default    1          1        0       1  1 min       no\n"
            "mail       0          1        0       0  -           no\n"
        ),
    )


def test_status_of_an_empty_table(db, database_url):
    assert cli(database_url, "status").stdout == "no jobs\n"


def test_failed_exits_0_when_no_job_has_failed(db, database_url):
    jobs.later(db, "default", "note", {})
    answer = cli(database_url, "failed")
    assert (answer.returncode, answer.stdout) == (0, "no job has failed for good\n")


def test_failed_prints_the_shelf_without_arguments_and_exits_1(db, database_url):
    shelved(db, args={"link": f"https://example.test/reset?token={SECRET}"})
    shelved(db, "mail")
    answer = cli(database_url, "failed")
    assert (answer.returncode, answer.stdout) == (
        1,
        (
            "ID  QUEUE    NAME    ATTEMPTS  FAILED AT (UTC)      LAST REASON\n"
            " 2  mail     doomed         1  1970-01-01 00:16:40  doomed\n"
            " 1  default  doomed         1  1970-01-01 00:16:40  doomed\n"
            "2 jobs of 2 failed for good, newest first\n"
        ),
    )
    assert cli(database_url, "failed", "--queue", "mail").stdout.splitlines()[1:] == [
        " 2  mail   doomed         1  1970-01-01 00:16:40  doomed",
        "1 job of 1 failed for good, newest first",
    ]
    full = cli(database_url, "failed", "--full")
    assert full.returncode == 1
    assert "job 1: doomed on default, failed for good at 1970-01-01 00:16:40 UTC after 1 attempt(s)" in full.stdout
    assert "  reason 1: doomed\n  traceback of the last failure:\n    Traceback" in full.stdout
    assert "RuntimeError: doomed" in full.stdout
    assert SECRET not in answer.stdout + full.stdout


def test_failed_full_says_which_run_each_reason_belongs_to_after_a_retry_from_the_shelf(db, database_url):
    job = shelved(db)
    jobs.retried(db, job, now=T)
    assert jobs.worked(db, "default", {"doomed": doomed}, T) == "failed doomed on attempt 1: doomed"
    full = cli(database_url, "failed", "--full").stdout
    assert f"job {job}: doomed on default, failed for good at 1970-01-01 00:16:40 UTC after 1 attempt(s)" in full
    assert "of its run 2 (retried from the shelf once)\n  run 1, reason 1: doomed\n  run 2, reason 1: doomed\n" in full


def test_retry_puts_a_job_back_and_exits_0_then_1_when_it_is_no_longer_on_the_shelf(db, database_url):
    job = shelved(db)
    answer = cli(database_url, "retry", str(job))
    assert (answer.returncode, answer.stdout) == (0, "1 job back in the queue\n")
    assert [(j["id"], j["attempts"]) for j in jobs.listed(db)] == [(job, 0)]
    again = cli(database_url, "retry", str(job))
    assert (again.returncode, again.stdout) == (
        1,
        (
            "0 jobs back in the queue\n"
            "1 job stayed: not on the failed shelf, or another job with the same unique key is waiting or in work\n"
        ),
    )


@pytest.mark.parametrize("chosen", [["ID"], ["--all"]])
def test_retry_on_a_paused_queue_says_the_jobs_wait_for_it_to_be_resumed(db, database_url, chosen):
    job = shelved(db, "mail")
    jobs.paused(db, "mail")
    answer = cli(database_url, "retry", *[str(job) if arg == "ID" else arg for arg in chosen])
    assert (answer.returncode, answer.stdout) == (
        0,
        "1 job back in the queue\nqueue mail is paused: its jobs wait until `python -m jobs resume mail`\n",
    )


def test_retry_all_says_which_jobs_stayed_for_their_unique_key(db, database_url):
    shelved(db, unique="sync:1")
    shelved(db)
    jobs.later(db, "default", "note", {}, unique="sync:1")
    answer = cli(database_url, "retry", "--all")
    assert (answer.returncode, answer.stdout) == (
        0,
        (
            "1 job back in the queue\n"
            "1 job stayed on the shelf: another job with the same unique key is waiting or in work\n"
        ),
    )
    answer = cli(database_url, "retry", "--all")
    assert answer.returncode == 1


def test_discard_deletes_jobs_from_the_shelf_and_exits_1_when_none_was_there(db, database_url):
    first, _, _ = shelved(db), shelved(db), shelved(db)
    answer = cli(database_url, "discard", str(first), "999")
    assert (answer.returncode, answer.stdout) == (0, "1 job discarded\n1 job not on the failed shelf\n")
    answer = cli(database_url, "discard", "--all")
    assert (answer.returncode, answer.stdout) == (0, "2 jobs discarded\n")
    assert jobs.listed(db) == []
    answer = cli(database_url, "discard", "--all")
    assert (answer.returncode, answer.stdout) == (1, "0 jobs discarded\n")


def test_failed_prints_a_page_with_the_total_and_the_way_to_the_next(db, database_url):
    for _ in range(5):
        shelved(db)
    first = cli(database_url, "failed", "--limit", "2")
    assert first.returncode == 1
    assert [line.split()[0] for line in first.stdout.splitlines()[1:3]] == ["5", "4"]
    assert first.stdout.splitlines()[-1] == "2 jobs of 5 failed for good, newest first; the next page: --after 4"
    last = cli(database_url, "failed", "--limit", "2", "--after", "2")
    assert last.stdout.splitlines()[1:] == [
        " 1  default  doomed         1  1970-01-01 00:16:40  doomed",
        "1 job of 5 failed for good, newest first",
    ]
    beyond = cli(database_url, "failed", "--after", "1")
    assert (beyond.returncode, beyond.stdout) == (1, "no job failed for good before job 1\n")


def test_failed_prints_at_most_a_page_of_jobs_by_default(db, database_url):
    jobs.later_many(db, "default", "doomed", [{}] * (jobs.PAGE + 5), T)
    db.execute("UPDATE jobs SET max_attempts = 0")  # every one of them on the shelf at once
    lines = cli(database_url, "failed").stdout.splitlines()
    assert len(lines) == 1 + jobs.PAGE + 1
    assert lines[-1] == f"{jobs.PAGE} jobs of {jobs.PAGE + 5} failed for good, newest first; the next page: --after 6"


def test_pause_and_resume_a_queue_and_say_when_nothing_changed(db, database_url):
    assert (cli(database_url, "pause", "mail").returncode, jobs.paused_queues(db)) == (0, {"mail"})
    again = cli(database_url, "pause", "mail")
    assert (again.returncode, again.stdout) == (1, "queue mail was paused already\n")
    assert cli(database_url, "status").stdout.splitlines()[1].split()[-1] == "yes"
    resumed = cli(database_url, "resume", "mail")
    assert (resumed.returncode, resumed.stdout, jobs.paused_queues(db)) == (0, "queue mail resumed\n", set())
    assert cli(database_url, "resume", "mail").returncode == 1


def test_cancel_shelves_a_waiting_job_marks_a_running_one_and_names_the_rest(db, database_url):
    waiting = jobs.later(db, "default", "note", {}, T)
    running = jobs.later(db, "default", "note", {}, T)
    db.execute("UPDATE jobs SET claim = 1, attempts = 1, run_at = %s WHERE id = %s", (jobs.now_ms() + 600_000, running))
    answer = cli(database_url, "cancel", str(waiting), str(running), "999")
    assert (answer.returncode, answer.stdout) == (
        0,
        (
            f"job {waiting} was waiting: it will not run, and is on the failed shelf as cancelled\n"
            f"job {running} is running: {RUNNING_CANCELLED}\n"
            "job 999 is neither waiting nor running: no such job, or on the failed shelf already\n"
        ),
    )
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(waiting, "cancelled")]
    assert cli(database_url, "cancel", str(waiting)).returncode == 1


BAD_WORK = [
    (["work", "default", "--threads", "0"], "--threads"),
    (["work", "default", "--lease", "0"], "--lease"),
    (["work", "default", "--lease", "-3"], "--lease"),
    (
        [
            "work",
            ",",
        ],
        "QUEUE",
    ),
    (["work", "default", "--grace", "-1"], "--grace"),
    (["work", "default", "--performers", "nosuch:x"], "nosuch"),
    (["pause", ""], "queue"),
    (["resume", ""], "queue"),
]


@pytest.mark.parametrize("command, named", BAD_WORK, ids=[" ".join(c) for c, _ in BAD_WORK])
def test_a_wrong_work_or_queue_argument_exits_2_before_any_table_is_made(db, database_url, command, named):
    """Checked before the database is touched: the empty schema the command runs in stays empty."""
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    db.execute("DROP SCHEMA IF EXISTS jobs_untouched CASCADE; CREATE SCHEMA jobs_untouched")
    try:
        url = make_conninfo(database_url, options="-c search_path=jobs_untouched")
        if "--performers" not in command and command[0] == "work":
            command = [*command, "--performers", "tests.jobs.performers:performers"]
        answer = cli(url, *command)
        assert answer.returncode == 2, (answer.stdout, answer.stderr)
        assert "Traceback" not in answer.stderr, answer.stderr
        assert named in answer.stderr, answer.stderr
        tables = db.execute(sql.SQL("SELECT count(*) FROM pg_tables WHERE schemaname = 'jobs_untouched'")).fetchone()[0]
        assert tables == 0, "no table was made"
    finally:
        db.execute("DROP SCHEMA jobs_untouched CASCADE")


def test_a_schedule_whose_cron_is_not_text_is_refused_naming_the_schedule():
    with pytest.raises(TypeError, match="schedule 'k'"):
        jobs.every("k", cron=5, queue="default", name="noop")
