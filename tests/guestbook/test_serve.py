"""`guestbook serve`: a real process, serving with waitress, with the mail worker beside it."""

import re
import subprocess
import sys
import uuid

import pytest

from guestbook.__main__ import main
from guestbook.settings import READERS, RETIRED, SECRET_KEY_MIN

from ..mail.smtpd import SMTPServer, free_port
from .served import ROOT, SECRET, SITE, WAIT, Served, environment, eventually, production_settings


def test_serve_refuses_to_start_outside_development_without_a_secret_and_a_database(monkeypatch, capsys):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)

    assert main(["serve"]) == 2
    said = capsys.readouterr().err.splitlines()
    assert [line.split()[:3] for line in said[:2]] == [
        ["guestbook:", "set", "DATABASE_URL"],
        ["guestbook:", "set", "SECRET_KEY"],
    ]


MAIL_URL = "smtp://127.0.0.1:25"  # production's MAIL_URL in the runs that send no letter
PRODUCTION = {"DATABASE_URL": None, "SECRET_KEY": SECRET, "BASE_URL": SITE, "MAIL_URL": MAIL_URL}  # None: the test's
BAD_SETTINGS = [  # a setting, a bad value (None: unset), the sentence serve says, and its mode
    ("DATABASE_URL", "", "set DATABASE_URL to the guestbook's PostgreSQL, or run with --development", []),
    (
        "DATABASE_URL",
        "the guestbook's database",
        "DATABASE_URL takes a PostgreSQL URL (postgresql://user:pass@host:5432/name) or a connection string "
        "(host=... dbname=...)",
        [],
    ),
    ("SECRET_KEY", "", "set SECRET_KEY (`openssl rand -hex 32` makes one), or run with --development", []),
    ("SECRET_KEY", "s" * 12, f"SECRET_KEY has 12 characters; it needs {SECRET_KEY_MIN} or more, random", []),
    (
        "MAIL_URL",
        None,
        "set MAIL_URL to the SMTP server that sends the letters: smtp+starttls://user:pass@host:587 or "
        "smtps://user:pass@host:465 (or smtp://host:25 for a relay that takes letters without a password)",
        [],
    ),
    (
        "MAIL_URL",
        "smtp://mailer:S3cret@relay.example:25",
        "MAIL_URL holds a password on smtp://, which would go in clear to a server that offers no STARTTLS: "
        "use smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465",
        [],
    ),
    (
        "MAIL_URL",
        "smtp+starttls://mailer:S3cret@relay.example:twenty-five",
        "MAIL_URL takes smtp://host:port, smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465, "
        "got 'smtp+starttls://mailer:***@relay.example:twenty-five'",
        [],
    ),
    (
        "MAIL_URL",
        "http://127.0.0.1:25",
        "MAIL_URL takes smtp://host:port, smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465, "
        "got 'http://127.0.0.1:25'",
        ["--development"],
    ),
    (
        "MAIL_FROM",
        "guestbook",
        "MAIL_FROM takes an address, with a display name or without (Guestbook <guestbook@example.com>): "
        "the letter's sender is not an address, with a display name or without: 'guestbook'",
        [],
    ),
    (
        "MAIL_FROM",
        "Guestbook <guestbook@example.com>, ops@example.com",
        "MAIL_FROM takes an address, with a display name or without (Guestbook <guestbook@example.com>): "
        "the letter's sender is not an address, with a display name or without: "
        "'Guestbook <guestbook@example.com>, ops@example.com'",
        ["--development"],
    ),
    (
        "BASE_URL",
        "http://guestbook.example",
        "set BASE_URL to the site's https:// address (the links in letters point there), not 'http://guestbook.example'",
        [],
    ),
    (
        "BASE_URL",
        "guestbook.example",
        "BASE_URL takes the site's address, as http://127.0.0.1:5000, not 'guestbook.example'",
        ["--development"],
    ),
    (
        "HOST",
        "every interface",
        "HOST (or --host) takes the IP address to listen on, as 127.0.0.1, ::1 or 0.0.0.0; got 'every interface'",
        [],
    ),
    (
        "WORKER_BESIDE",
        "no",
        "WORKER_BESIDE (or --no-worker) takes 1 (a mail worker beside the server) or 0 (none: `guestbook work` "
        "sends the letters), got 'no'",
        [],
    ),
    ("PORT", "eighty", "PORT (or --port) takes a whole number, got 'eighty'", []),
    ("PORT", "70000", "PORT (or --port) takes a TCP port, 1 to 65535, got '70000'", ["--development"]),
    ("MAIL_OUTBOX", "/dev/null", "MAIL_OUTBOX takes a folder, and '/dev/null' is a file", ["--development"]),
    ("MAIL_RETRY_INTERVALS", "1,soon", "MAIL_RETRY_INTERVALS takes seconds separated by commas, got '1,soon'", []),
    ("RESET_TOKEN_MAX_AGE", "an hour", "RESET_TOKEN_MAX_AGE takes a whole number, got 'an hour'", []),
    ("RESET_TOKEN_MAX_AGE", "0", "RESET_TOKEN_MAX_AGE takes a whole number, 1 or more, got '0'", []),
    ("LETTERS_WAITING_MAX", "0", "LETTERS_WAITING_MAX takes a whole number, 1 or more, got '0'", []),
    ("LETTERS_WAITING_MAX", "-5", "LETTERS_WAITING_MAX takes a whole number, got '-5'", ["--development"]),
    ("MAIL_RATE", "14/s", "MAIL_RATE takes a whole number, got '14/s'", []),
    (
        "TRUSTED_PROXIES",
        "1",
        "TRUSTED_PROXIES names the proxies' addresses now, not how many there are (got '1'): set it to the "
        "address or network each proxy connects from, as 127.0.0.1 or 10.0.0.0/8,10.1.2.3",
        [],
    ),
    (
        "TRUSTED_PROXIES",
        "10.0.0.1,proxy.example",
        "TRUSTED_PROXIES takes addresses or networks separated by commas, as 10.0.0.0/8,10.1.2.3; got 'proxy.example'",
        [],
    ),
    (
        "ADMIN_EMAILS",
        "ada@example.com",
        "ADMIN_EMAILS no longer grants the dashboard to an address: grant it to a confirmed account "
        "with `python -m guestbook admins add ADDRESS`, and unset ADMIN_EMAILS",
        ["--development"],
    ),
]


@pytest.mark.parametrize("setting, value, words, args", BAD_SETTINGS)
def test_serve_with_a_bad_setting_says_which_and_exits_2(database_url, tmp_path, setting, value, words, args):
    settings = {**PRODUCTION, "DATABASE_URL": database_url, setting: value}
    env = environment(PYTHONPATH=str(ROOT), **{name: text for name, text in settings.items() if text is not None})
    port = [] if setting == "PORT" else ["--port", str(free_port())]  # --port would win over PORT

    done = subprocess.run(
        [sys.executable, "-m", "guestbook", "serve", *port, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )

    assert (done.returncode, done.stderr.strip(), done.stdout) == (2, f"guestbook: {words}", "")  # never listened


def test_every_setting_of_the_operations_table_is_tried_with_a_bad_value():
    table = (ROOT / "docs" / "operations.md").read_text().split("| setting |")[1].split("\n\n")[0]
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))

    assert documented == {setting for setting, *_ in BAD_SETTINGS} - set(RETIRED) == set(READERS) - set(RETIRED)


def test_importing_the_app_never_fails_on_a_bad_setting(tmp_path):
    env = environment(PYTHONPATH=str(ROOT), MAIL_RETRY_INTERVALS="soon")

    done = subprocess.run(
        [sys.executable, "-c", "import mail, guestbook, guestbook.__main__"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )

    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    "secret, base_url, words",
    [
        (
            "s" * (SECRET_KEY_MIN - 1),
            SITE,
            f"SECRET_KEY has {SECRET_KEY_MIN - 1} characters; it needs {SECRET_KEY_MIN}",
        ),
        (SECRET, None, "set BASE_URL to the site's https:// address"),
        (SECRET, "http://guestbook.example", "not 'http://guestbook.example'"),
        (SECRET, "https://", "set BASE_URL to the site's https:// address"),
    ],
)
def test_serve_refuses_a_short_secret_or_a_base_url_that_is_not_https(monkeypatch, capsys, secret, base_url, words):
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never reached: refused first
    monkeypatch.setenv("SECRET_KEY", secret)
    if base_url is None:
        monkeypatch.delenv("BASE_URL", raising=False)
    else:
        monkeypatch.setenv("BASE_URL", base_url)

    assert main(["serve"]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.slow
def test_served_signup_answers_and_the_worker_beside_sends_its_letter(database_url, db, tmp_path):
    with SMTPServer() as smtp:
        env = production_settings(database_url, smtp.url)
        served = Served([], env, tmp_path)
        try:
            assert served.said.startswith(f"The guestbook is at {SITE}")
            address = f"served-{uuid.uuid4().hex[:8]}@example.com"  # new even on a database other tests used
            status, _ = served.request("/signup", {"email": address, "password": "correct horse battery"})
            assert status == 302
            with smtp.inbox.arrived:
                assert smtp.inbox.arrived.wait_for(lambda: smtp.letters, WAIT)
            assert f"{SITE}/confirm/" in smtp.letters[0].get_body(("plain",)).get_content()
        finally:
            assert served.stopped() == 0
        assert "the worker stopped: 1 job(s) done, 0 failed for good" in served.after, served.after


@pytest.mark.slow
def test_a_mail_from_with_a_display_name_signs_the_letters_of_a_served_guestbook(database_url, db, tmp_path):
    with SMTPServer() as smtp:
        env = production_settings(database_url, smtp.url, MAIL_FROM="Guestbook <guestbook@example.com>")
        served = Served([], env, tmp_path)
        try:
            address = f"served-{uuid.uuid4().hex[:8]}@example.com"
            status, _ = served.request("/signup", {"email": address, "password": "correct horse battery"})
            assert (status, served.request("/resets/new", {"email": address})[0]) == (302, 302)
            with smtp.inbox.arrived:
                assert smtp.inbox.arrived.wait_for(lambda: len(smtp.letters) == 1, WAIT)  # the confirmation
        finally:
            assert served.stopped() == 0
    assert (smtp.letters[0]["From"], smtp.senders) == ("Guestbook <guestbook@example.com>", ["guestbook@example.com"])


@pytest.mark.slow
def test_development_keeps_a_secret_and_writes_letters_to_the_outbox(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    try:
        address = f"served-{uuid.uuid4().hex[:8]}@example.com"
        served.request("/signup", {"email": address, "password": "correct horse battery"})
        # The worker writes the letter a moment after the answer: look until it is there.
        assert eventually(lambda: f"To {address}" in served.request("/outbox")[1])
    finally:
        assert served.stopped() == 0
    assert len((tmp_path / ".secret_key").read_text()) == 64
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 1


@pytest.mark.slow
def test_the_dashboard_s_metrics_show_the_counters_of_the_worker_beside_the_server(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    try:
        status, metrics = served.request("/jobs/metrics")
        assert status == 200
        assert 'jobs_worker_queue_paused{queue="mail"} 0' in metrics.splitlines()
        served.request(
            "/signup", {"email": f"served-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse battery"}
        )
        assert eventually(
            lambda: (
                'jobs_worker_attempts_total{outcome="processed"} 1' in served.request("/jobs/metrics")[1].splitlines()
            )
        )
    finally:
        assert served.stopped() == 0


@pytest.mark.slow
def test_development_on_its_embedded_database_prints_the_url_that_jobs_commands_take(tmp_path):
    served = Served(["--development"], environment(), tmp_path)  # no DATABASE_URL: .pgdata/ in tmp_path
    try:
        said = [line for line in served.before if line.startswith("The database is at ")]  # printed before the address
        url = said[0].split()[4] if said else ""
        assert url.startswith("postgresql://") and str(tmp_path / ".pgdata") in url, served.before
        done = subprocess.run(
            [sys.executable, "-m", "jobs", "status"],
            env=environment(DATABASE_URL=url, PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stdout
    finally:
        assert served.stopped() == 0
