"""Fixtures of the browser specs: the browser, a fresh database, an inbox, and the guestbook between them.

A spec asks for pytest-playwright's `page`, and for `guestbook` and `inbox` (or
`guest`, which takes the usual steps in that page). A spec file that needs the
guestbook configured otherwise overrides `guestbook_settings` or `inbox` at its
top. A spec that fails leaves a screenshot and a trace under test-results/
(open the trace with `playwright show-trace`).
"""

import os

import pytest

from .guest import Guest
from .inbox import Inbox
from .leftovers import swept
from .served import Guestbook, emptied
from .tether import stops_on_sigterm

SYSTEM_CHROMIUM = "/usr/bin/chromium"  # Debian's Chromium, used unless CHROMIUM_PATH names another
# How a machine's own Chromium is launched in a container or CI: without its sandbox,
# a GPU, or the calls home (updates, sync, QUIC) that would only slow it down.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def pytest_configure(config) -> None:
    """Keeps a screenshot and a trace of every spec that fails, unless the command line asks for them.

    A run stopped with SIGTERM runs its teardown first, as one stopped with Ctrl-C does.
    """
    stops_on_sigterm()
    if config.option.screenshot == "off":
        config.option.screenshot = "only-on-failure"
    if config.option.tracing == "off":
        config.option.tracing = "retain-on-failure"


def system_chromium() -> str | None:
    """The machine's own Chromium: CHROMIUM_PATH, else Debian's when installed, else None."""
    if os.environ.get("CHROMIUM_PATH"):
        return os.environ["CHROMIUM_PATH"]
    return SYSTEM_CHROMIUM if os.access(SYSTEM_CHROMIUM, os.X_OK) else None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, browser_name):
    """Launches the machine's own Chromium, headless, where there is one; Playwright's own browser otherwise."""
    chromium = system_chromium()
    if browser_name != "chromium" or chromium is None:
        return browser_type_launch_args
    return {"headless": True, **browser_type_launch_args, "executable_path": chromium, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def database_url():
    """The database the guestbooks use: DATABASE_URL's when it is set, else a throw-away embedded PostgreSQL."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    from guestbook import embedded

    swept()  # the servers that killed runs left behind
    with embedded.throwaway(prefix="guestbook-e2e-") as url:
        yield url


@pytest.fixture
def inbox():
    """A running SMTP server that keeps every letter sent to it."""
    inbox = Inbox().start()
    yield inbox
    inbox.stop()


@pytest.fixture
def guestbook_settings(inbox):
    """The guestbook's configuration beyond its port, database and secret: here, MAIL_URL naming the inbox."""
    return {"MAIL_URL": inbox.url}


@pytest.fixture
def guestbook(database_url, guestbook_settings, tmp_path):
    """The guestbook served as `make run` serves it, on emptied tables, answering by the time the spec begins."""
    emptied(database_url)
    guestbook = Guestbook(database_url, tmp_path, guestbook_settings)
    yield guestbook.wait_until_answering()
    guestbook.stop()


@pytest.fixture
def page(page, guestbook):
    """pytest-playwright's page, in a browser that opened the link the guestbook printed, as the person who ran it
    does."""
    page.goto(guestbook.key_link)
    return page


@pytest.fixture
def guest(page, guestbook, inbox):
    """A person taking the usual steps at the guestbook, in the spec's browser page."""
    return Guest(page, guestbook, inbox)
