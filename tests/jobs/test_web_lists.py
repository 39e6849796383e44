"""The dashboard's lists of jobs by state (jobs.web.lists), through WSGI, on a real PostgreSQL.

Each count of the queues page leads to its list; a list pages by keyset in its state's
order, keeps its filters in every address it links to, finds a job by id or by an
argument's value (never a secret one), and says so when its bounded walk ran out.
"""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import claims
from jobs.store.claims import Hold
from tests.jobs.test_web import SECRET, T, everything, get, operator, shelved

HOUR = 3_600_000  # ms


@pytest.fixture
def client(connect):
    """A browser of the dashboard, mounted at the root, whose requests get in when they carry OPERATOR."""
    return Client(jobs.web.app(connect, authorize=operator))


def listed_ids(page: str) -> list[int]:
    """The ids of the jobs a list shows, in its order."""
    return [int(id) for id in re.findall(r'<td class="number" data-label="Job"><a href="[^"]*">(\d+)</a>', page)]


@pytest.fixture
def states(db):
    """One job of each state on the queue mail: due, scheduled, in work (held by worker 7) and failed."""
    failed = shelved(db)
    due = jobs.later(db, "mail", "note", {}, T)
    scheduled = jobs.later(db, "mail", "note", {}, jobs.now_ms() + HOUR)
    held = jobs.later(db, "mail", "deliver", {}, T - 1)
    claims.claimed(db, "mail", hold=Hold(worker=7))  # takes `held`, the first due
    return {"failed": failed, "due": due, "scheduled": scheduled, "held": held}


def test_each_count_of_the_queues_page_leads_to_the_list_of_its_jobs(client, db):
    failed = shelved(db)
    held = jobs.later(db, "mail", "deliver", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=7))
    due = jobs.later(db, "mail", "note", {}, T)
    scheduled = jobs.later(db, "mail", "note", {}, jobs.now_ms() + HOUR)
    queues = get(client, "/").text
    for state in ("due", "scheduled", "in_work"):
        assert f'href="/jobs?state={state}&amp;queue=mail"' in queues, state
    assert listed_ids(get(client, "/jobs?state=due&queue=mail").text) == [due]
    assert listed_ids(get(client, "/jobs?state=scheduled&queue=mail").text) == [scheduled]
    assert listed_ids(get(client, "/jobs?state=in_work&queue=mail").text) == [held]
    assert listed_ids(get(client, "/jobs?state=failed&queue=mail").text) == [failed]
    assert listed_ids(get(client, "/jobs?state=due&queue=elsewhere").text) == []
    assert listed_ids(get(client, "/jobs").text) == [due], "the due jobs of every queue, by default"


def test_a_list_pages_by_keyset_in_its_state_s_order(client, db):
    late = jobs.later(db, "mail", "note", {}, T + 2)
    urgent = jobs.later(db, "reports", "note", {}, T + 5, priority=-1)
    early = jobs.later(db, "mail", "note", {}, T + 1)
    first = get(client, "/jobs?state=due&limit=2").text
    assert listed_ids(first) == [urgent, early], "the claim's order: priority, then the moment due, on every queue"
    onwards = re.search(r'href="(/jobs\?[^"]*after=[^"]*)">Next page', first).group(1).replace("&amp;", "&")
    assert listed_ids(get(client, onwards).text) == [late]
    soon = jobs.later(db, "mail", "note", {}, jobs.now_ms() + HOUR)
    sooner = jobs.later(db, "mail", "note", {}, jobs.now_ms() + HOUR // 2)
    page = get(client, "/jobs?state=scheduled&limit=1").text
    assert listed_ids(page) == [sooner]
    onwards = re.search(r'href="(/jobs\?[^"]*after=[^"]*)">Next page', page).group(1).replace("&amp;", "&")
    assert listed_ids(get(client, onwards).text) == [soon]
    newest_first = [shelved(db) for _ in range(3)][::-1]
    assert listed_ids(get(client, "/jobs?state=failed&limit=2").text) == newest_first[:2]
    assert listed_ids(get(client, f"/jobs?state=failed&after={newest_first[1]}").text) == newest_first[2:]


def test_the_filters_are_kept_in_the_address_of_every_link_of_the_list(client, db):
    for _ in range(3):
        jobs.later(db, "mail", "note", {}, T)
    jobs.later(db, "mail", "deliver", {}, T)
    page = get(client, "/jobs?state=due&queue=mail&name=note&limit=2").text
    assert len(listed_ids(page)) == 2
    onwards = re.search(r'href="(/jobs\?[^"]*)">Next page', page).group(1)
    assert "queue=mail" in onwards and "name=note" in onwards
    for tab in ("scheduled", "in_work"):
        assert f'href="/jobs?state={tab}&amp;queue=mail&amp;name=note"' in page, tab
    assert 'href="/failed?queue=mail&amp;name=note"' in page, "the failed tab is the one failed view"
    assert 'name="name" value="note"' in page and 'name="queue" value="mail"' in page


def test_a_list_filters_by_name(client, db):
    jobs.later(db, "mail", "note", {}, T)
    deliver = jobs.later(db, "mail", "deliver", {}, T)
    assert listed_ids(get(client, "/jobs?name=deliver").text) == [deliver]


def test_a_search_finds_jobs_by_an_argument_s_value_and_never_by_a_secret_one(client, db):
    ada = jobs.later(db, "mail", "deliver", {"to": "ada@example.com", "tries": 3}, T)
    jobs.later(db, "mail", "deliver", {"to": "bob@example.com"}, T)
    jobs.later(db, "mail", "deliver", {"to": "eve@example.com", "link": SECRET}, T, secret=["link"])
    assert listed_ids(get(client, "/jobs?q=ada@example.com").text) == [ada]
    assert listed_ids(get(client, "/jobs?q=3").text) == [ada], "a number's text matches"
    page = get(client, f"/jobs?q={SECRET}").text
    assert listed_ids(page) == [] and "None matches the filters" in page


def test_a_search_for_a_whole_number_names_the_job_of_that_id_whatever_its_state(client, states):
    page = get(client, f"/jobs?state=due&q={states['failed']}").text
    assert f'<a href="/job/{states["failed"]}">Job {states["failed"]}</a>: doomed on mail, failed.' in page
    assert "No job has the id 999." in get(client, "/jobs?q=999").text
    for beyond in ("99999999999999999999", "9" * 5000, "0"):
        answer = get(client, f"/jobs?q={beyond[:200]}")
        assert answer.status_code == 200 and "No job has the id" not in answer.text, "only an argument's value"


def test_a_filtered_walk_that_runs_out_says_how_many_it_searched_and_goes_on(client, db, monkeypatch):
    monkeypatch.setattr("jobs.web.listing.WALK_MAX", 3)
    for _ in range(4):
        jobs.later(db, "mail", "note", {}, T)
    wanted = jobs.later(db, "mail", "deliver", {}, T)
    page = get(client, "/jobs?name=deliver").text
    assert listed_ids(page) == [] and "Searched 3 jobs from here and found 0" in page
    onwards = re.search(r'href="(/jobs\?[^"]*)">search on', page).group(1).replace("&amp;", "&")
    assert listed_ids(get(client, onwards).text) == [wanted]


def test_the_in_work_list_names_each_job_s_worker_and_links_to_the_jobs_it_holds(client, db):
    held = jobs.later(db, "mail", "deliver", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=7))
    other = jobs.later(db, "mail", "deliver", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=8))
    page = get(client, "/jobs?state=in_work").text
    assert listed_ids(page) == [held, other]
    assert '<a href="/jobs?state=in_work&amp;worker=7">worker <span title="7">7</span></a>' in page
    assert listed_ids(get(client, "/jobs?state=in_work&worker=7").text) == [held]


def test_a_list_never_shows_a_job_s_arguments(client, db):
    jobs.later(db, "mail", "deliver", {"link": SECRET}, T)
    assert SECRET not in get(client, "/jobs").text


BAD_LISTS = [
    "/jobs?state=elsewhere",
    "/jobs?after=1",
    "/jobs?after=a,b,c",
    "/jobs?after=1,2,99999999999999999999",
    "/jobs?state=failed&after=1,2",
    "/jobs?limit=0",
    "/jobs?limit=100000",
    "/jobs?worker=x",
    "/jobs?q=%00",
    f"/jobs?name={'n' * 201}",
    f"/jobs?after={'9' * 5000},1,1",
]


@pytest.mark.parametrize("path", BAD_LISTS)
def test_a_bad_list_address_gets_a_4xx_page_that_says_what_was_wrong(client, states, path):
    answer = get(client, path)
    assert 400 <= answer.status_code < 500
    assert 'class="note error"' in answer.text


def test_the_lists_change_nothing_and_are_refused_without_authorization(client, states, db):
    before = everything(db)
    for state in ("due", "scheduled", "in_work", "failed"):
        assert get(client, f"/jobs?state={state}&q=1&name=note&queue=mail").status_code == 200
        assert client.get(f"/jobs?state={state}").status_code == 403
    assert everything(db) == before


def test_the_lists_are_linked_from_every_page_s_header(client, db):
    assert '<a href="/jobs">Jobs</a>' in get(client, "/failed").text


def test_there_is_one_failed_view_the_header_s_failed_and_the_failed_tab_of_the_jobs(client, db):
    first = shelved(db)
    second = shelved(db, queue="reports")
    jobs.later(db, "mail", "note", {}, T)
    header = re.search(r'<a href="([^"]+)">Failed</a>', get(client, "/").text).group(1)
    tab = re.search(r'<a href="([^"]+)">Failed</a>', get(client, "/jobs?state=due").text.split("</header>")[1])
    assert header == tab.group(1) == "/failed"
    page = get(client, "/failed").text
    assert '<strong aria-current="page">Failed</strong>' in page, "the view is the Jobs list's Failed tab"
    assert re.findall(r'name="id" value="(\d+)"', page) == [str(second), str(first)], "newest first, ticked to act on"
    assert "<details><summary>traceback</summary>" in page and "Retry selected</button>" in page
    assert 'href="/bulk?action=retry&amp;state=failed"' in page, "and the bulk actions of the list"
    one = get(client, "/failed?queue=mail").text
    assert re.findall(r'name="id" value="(\d+)"', one) == [str(first)]
    same = get(client, "/jobs?state=failed&queue=mail").text
    assert same.replace("/jobs?state=failed&amp;queue=mail", "/failed?queue=mail") == one, "one view, either address"


def test_a_batch_s_page_lists_its_jobs_still_in_the_table(client, db):
    batch = jobs.batch(db, "reports", [("note", {}), ("note", {}), ("note", {})])
    first, *rest = [row[0] for row in db.execute("SELECT id FROM jobs WHERE batch = %s ORDER BY id", (batch,))]
    jobs.worked(db, "reports", {"note": lambda *_: None}, jobs.now_ms())  # the first succeeds: gone from the table
    assert f'<a href="/batch/{batch}">{batch}</a>' in get(client, "/batches").text
    assert f'<dt>Batch</dt><dd><a href="/batch/{batch}">{batch}</a></dd>' in get(client, f"/job/{rest[0]}").text
    page = get(client, f"/batch/{batch}?limit=1").text
    assert "1 of 3 settled" in page and listed_ids(page) == rest[:1]
    onwards = re.search(r'href="(/batch/[^"]*)">Next page', page).group(1).replace("&amp;", "&")
    assert listed_ids(get(client, onwards).text) == rest[1:]
    assert first not in listed_ids(get(client, f"/batch/{batch}").text)


@pytest.mark.parametrize("path", ["/batch/abc", "/batch/0", "/batch/99", "/batch/1?after=x", "/batch/1?limit=0"])
def test_a_bad_batch_address_gets_a_4xx_page(client, db, path):
    jobs.batch(db, "reports", [("note", {})])
    answer = get(client, path)
    assert 400 <= answer.status_code < 500 and 'class="note error"' in answer.text


def test_a_worker_s_row_and_a_held_job_s_page_link_to_the_jobs_that_worker_holds(client, db):
    now = jobs.now_ms()
    db.execute(
        "INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at) "
        "VALUES (7, 'box', 42, '{mail}', 2, 30000, 1, %s, %s)",
        (now, now),
    )
    held = jobs.later(db, "mail", "note", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=7))
    link = '<a href="/jobs?state=in_work&amp;worker=7">'
    assert f'data-label="Holding">{link}1</a>' in get(client, "/workers").text
    assert f'<dt>Held by</dt><dd>{link}worker <span title="7">7</span></a></dd>' in get(client, f"/job/{held}").text
