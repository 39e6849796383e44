"""Without a mail server, in development, letters go to the outbox: /outbox shows them, and their links work
and keep the header's Outbox and Jobs; a page another user serves on another port of 127.0.0.1 is sent nothing
that opens it."""

import http.server
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD
from .inbox import WAIT
from .local import HOST, free_port, wait_until

ADA = "ada@example.com"


@pytest.fixture
def guestbook_settings():
    """No MAIL_URL: the guestbook writes its letters to its outbox folder."""
    return {}


def test_letter_in_the_outbox_confirms_the_account_and_keeps_the_outbox_and_the_dashboard_a_click_away(
    page, guestbook, output_path
):
    page.goto(f"{guestbook.keyed_url}/signup")  # the pages of the printed link, which show the outbox
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text(f"A letter is on its way to {ADA}")

    # The worker writes the letter a moment after the answer; nothing announces it.
    wait_until(lambda: any(guestbook.outbox.glob("*.eml")), WAIT, "a letter in the outbox folder")
    page.get_by_role("link", name="Outbox").click()
    letter = page.get_by_role("article").filter(has=page.get_by_role("heading", name=CONFIRMATION))
    expect(letter).to_contain_text(f"To {ADA}")
    letter.get_by_role("link").click()

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm my account").click()
    expect(page.get_by_role("status")).to_have_text("Your account is confirmed. You can sign in now.")
    expect(page.get_by_role("link", name="Outbox")).to_be_visible()  # still under the printed link
    expect(page.get_by_role("link", name="Jobs")).to_be_visible()
    page.screenshot(path=Path(output_path) / "confirmed-from-the-outbox.png")
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


class OtherPort(http.server.ThreadingHTTPServer):
    """A page another user of the machine serves on another port of 127.0.0.1; keeps the Cookie header of each
    request."""

    def __init__(self):
        self.cookies: list[str] = []
        outer = self

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.cookies.append(self.headers.get("Cookie", ""))
                body = b"<p>a local demo</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__((HOST, free_port()), Page)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def status_with(url: str, cookie: str) -> int:
    """The status of a GET of `url` sent with the Cookie header `cookie`, as the other user would send it."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Cookie": cookie}), timeout=WAIT) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_page_on_another_port_is_sent_nothing_that_opens_the_outbox_or_the_dashboard(page, guestbook):
    expect(page.get_by_role("link", name="Outbox")).to_be_visible()  # the printed link's pages show it
    other = OtherPort()
    try:
        page.goto(f"http://{HOST}:{other.server_port}/")
        wait_until(lambda: other.cookies, WAIT, "the other port's page to be asked for")
        sent = other.cookies[0]  # the page's own request (its icon's may follow)
        assert [status_with(f"{guestbook.url}{path}", sent) for path in ("/outbox", "/jobs/")] == [403, 403]
    finally:
        other.shutdown()
        other.server_close()
