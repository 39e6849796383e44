"""An action of the dashboard sends the operator back to the page they were on, saying in one line what it did.

The page is the form's `next`, else the Referer, and only ever a page of the dashboard;
the line travels sealed, so a link made elsewhere cannot put words on the dashboard.
"""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from tests.jobs.test_web import OPERATOR, get, operator, posted, shelved


def token(client):
    return re.search(r'name="csrf" value="([^"]+)"', get(client, "/").text).group(1)


def sent(client, path, data, **environ):
    """POSTs `data` with a token, without following the answer."""
    return client.post(path, data={"csrf": token(client), **data}, environ_base={**OPERATOR, **environ})


@pytest.fixture
def client(connect):
    return Client(jobs.web.app(connect, authorize=operator, secret="the app's secret"))


def test_an_action_answers_303_to_the_page_its_form_came_from_which_says_what_it_did(client, db):
    job = shelved(db)
    answer = sent(client, "/retry", {"id": str(job), "next": "/jobs?state=failed&queue=mail"})
    assert answer.status_code == 303
    location = urlsplit(answer.headers["Location"])
    assert location.path == "/jobs" and parse_qs(location.query)["queue"] == ["mail"]
    page = get(client, answer.headers["Location"])
    assert re.search(r'<div class="note" role="status">1 of 1 back in the queue, due now\.</div>', page.text)


def test_each_button_of_a_page_carries_the_page_as_where_its_action_returns(client, db):
    job = shelved(db)
    page = get(client, f"/job/{job}").text
    assert f'name="next" value="/job/{job}"' in page, "retry returns to the job's page"
    assert 'name="next" value="/failed"' in page, "discard returns to the shelf: the job's page is gone"
    queues = get(client, "/").text
    assert set(re.findall(r'name="next" value="([^"]*)"', queues)) == {"/"}, "never the table's own fragment"


def test_without_next_an_action_returns_to_the_referer_when_it_is_a_page_of_the_dashboard(client, db):
    answer = sent(client, "/pause", {"queue": "mail"}, HTTP_REFERER="http://localhost/workers")
    assert urlsplit(answer.headers["Location"]).path == "/workers"
    assert "Queue mail paused" in get(client, answer.headers["Location"]).text


@pytest.mark.parametrize(
    "next_, referer",
    [
        ("//elsewhere.example/", None),
        ("https://elsewhere.example/", None),
        ("/\\elsewhere.example", None),
        ("/nowhere", None),
        ("/job/../../outbox", None),
        ("/job/%2e%2e", None),
        ("/\r\nSet-Cookie: x=1", None),
        ("", "https://elsewhere.example/workers"),
        ("", "http://localhost/outbox"),
    ],
)
def test_an_action_never_sends_the_operator_off_the_dashboard(client, db, next_, referer):
    environ = {"HTTP_REFERER": referer} if referer else {}
    answer = sent(client, "/pause", {"queue": "mail", "next": next_}, **environ)
    assert answer.status_code == 303
    assert urlsplit(answer.headers["Location"]).path == "/", "the action's own default page"
    assert jobs.paused_queues(db) == {"mail"}


def test_the_dashboard_mounted_under_a_path_sends_back_below_it(connect, db):
    mounted = Client(jobs.web.app(connect, authorize=operator))
    page = mounted.get("/", base_url="http://localhost/jobs/", environ_base=OPERATOR).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    answer = mounted.post(
        "/pause",
        base_url="http://localhost/jobs/",
        data={"csrf": csrf, "queue": "mail", "next": "/workers"},
        environ_base=OPERATOR,
    )
    assert urlsplit(answer.headers["Location"]).path == "/jobs/workers"


def test_a_line_not_sealed_by_the_dashboard_is_not_shown_and_a_sealed_one_shows_as_text(client, db):
    forged = get(client, "/workers?said=Your+account+is+locked&seal=" + "0" * 32).text
    assert "Your account is locked" not in forged
    answer = sent(client, "/pause", {"queue": "<b>mail</b>"})
    shown = get(client, answer.headers["Location"]).text
    assert "Queue &lt;b&gt;mail&lt;/b&gt; paused" in shown and "<b>mail</b>" not in shown


def test_a_line_says_every_part_of_what_the_action_did_in_one_line(client, db):
    ids = [shelved(db) for _ in range(2)]
    page = posted(client, "/discard", {"id": [str(ids[0]), "999"]}).text
    assert re.search(r'role="status">1 of 2 discarded: deleted for good\. 1 were not on the shelf', page)


def test_a_bulk_action_once_done_returns_to_the_list_it_acted_on_saying_what_it_did(client, db):
    for _ in range(2):
        shelved(db)
    answer = sent(client, "/bulk", {"action": "retry", "state": "failed", "queue": "mail", "next": "/bulk"})
    location = urlsplit(answer.headers["Location"])
    assert (answer.status_code, location.path, parse_qs(location.query)["queue"]) == (303, "/failed", ["mail"])
    page = get(client, answer.headers["Location"]).text
    assert '<div class="note" role="status">2 of 2 failed jobs on mail back in the queue.</div>' in page
