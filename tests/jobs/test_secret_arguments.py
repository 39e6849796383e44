"""Secret arguments (`later(..., secret=[...])`): no page of the dashboard, no command and no log line shows them."""

import logging
import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.core.arguments import HIDDEN

from .test_cli import cli

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch
TOKEN = "WzEsImFiYyJd.ZxYz12.kfHmTkn7I1EYx4CLPQC4b5Zs2SM"  # shaped like a signed link's token
LINK = f"https://site.example/resets/{TOKEN}/edit"
PAGES = ["/", "/queues.fragment", "/failed", "/failed?queue=mail", "/metrics", "/batches", "/schedules"]


@jobs.policy(attempts=1)
def quoting(db, args):
    """A performer whose failure quotes the link, as an error message about a value often does."""
    raise ValueError(f"could not send the letter with {args['link']} to {args['to']}")


def leaked(text: str) -> list[str]:
    """The parts of the link's token that `text` holds: its payload, its timestamp or its signature."""
    return [part for part in TOKEN.split(".") if len(part) > 6 and part in text] + ([TOKEN] if TOKEN in text else [])


@pytest.fixture
def failed_job(db, caplog):
    """A job whose secret argument holds the link, failed for good with a reason that quoted it; (its id, the log)."""
    caplog.set_level(logging.DEBUG)
    job = jobs.later(db, "mail", "quoting", {"link": LINK, "to": "ada@example.com"}, T, secret=["link"])
    said = jobs.worked(db, "mail", {"quoting": quoting}, T)
    assert said.startswith("failed quoting on attempt 1: could not send the letter with [secret] to ada@example.com")
    return job, caplog.text  # and what the log said while it ran


def test_a_failure_s_reason_traceback_and_log_line_hold_no_secret(db, failed_job):
    _, logged = failed_job
    (shelved,) = jobs.failed(db, "mail")

    assert "to ada@example.com" in shelved["failure"]
    assert leaked(shelved["failure"]) == leaked(shelved["traceback"]) == leaked(" ".join(shelved["reasons"])) == []
    assert HIDDEN in shelved["traceback"]
    assert leaked(logged) == []
    assert "job 1 (quoting on mail) failed for good" in logged


def test_the_command_line_shows_no_secret(database_url, db, failed_job):
    for command in (["status"], ["failed"], ["failed", "--full"], ["failed", "--queue", "mail", "--full"]):
        done = cli(database_url, *command)
        assert done.returncode in (0, 1), done.stderr
        assert leaked(done.stdout + done.stderr) == [], command
    assert "could not send the letter with [secret]" in cli(database_url, "failed", "--full").stdout


def test_the_dashboard_shows_no_secret_even_when_asked_for_the_arguments(connect, db, failed_job):
    job, _ = failed_job
    client = Client(jobs.web.app(connect, authorize=lambda environ: True))
    for path in [*PAGES, f"/job/{job}", f"/job/{job}?args=shown"]:
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert leaked(answer.text) == [], path
    shown = client.get(f"/job/{job}?args=shown").text
    assert f"&quot;link&quot;: &quot;{HIDDEN}&quot;" in shown
    assert "ada@example.com" in shown  # the arguments that are not secret still show


def test_a_job_waiting_shows_its_other_arguments_and_hides_its_secret_ones(connect, db):
    job = jobs.later(db, "mail", "deliver", {"to": "ada@example.com", "token": TOKEN}, secret=["token"])
    shown = Client(jobs.web.app(connect, authorize=lambda environ: True)).get(f"/job/{job}?args=shown").text
    assert leaked(shown) == []
    assert "ada@example.com" in shown


def test_later_many_keeps_the_secret_of_each_job(connect, db):
    assert jobs.later_many(db, "mail", "deliver", [{"token": TOKEN}, {"token": TOKEN + "x"}], secret=["token"]) == 2
    client = Client(jobs.web.app(connect, authorize=lambda environ: True))
    for (job,) in db.execute("SELECT id FROM jobs").fetchall():
        assert leaked(client.get(f"/job/{job}?args=shown").text) == []


@pytest.mark.parametrize(
    "secret, error, words",
    [
        (["link", "password"], ValueError, "secret names arguments it does not have: password"),
        ("link", TypeError, "secret takes a list of argument names"),
        ([1], TypeError, "secret takes a list of argument names"),
    ],
)
def test_a_secret_that_names_no_argument_is_refused_and_writes_nothing(db, secret, error, words):
    with pytest.raises(error, match=re.escape(words)):
        jobs.later(db, "mail", "deliver", {"link": LINK}, secret=secret)
    assert db.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
