"""The dashboard (jobs.web) as a browser meets it, through WSGI, on a real PostgreSQL.

Every page and action is refused without authorization, every action without its CSRF
token; a GET changes nothing; a bad id or form gets a 4xx page, never a 500.
"""

import re

import psycopg
import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store.pulse import Pulse
from jobs.store.schedules import fired
from tests.jobs.performers import doomed

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch
SECRET = "s3cr3t-t0ken"
OPERATOR = {"HTTP_X_OPERATOR": "yes"}  # the header the tests' authorize looks for
PAGES = [
    "/",
    "/queues.fragment",
    "/failed",
    "/job/1",
    "/batches",
    "/schedules",
    "/workers",
    "/metrics",
    "/style.css",
    "/refresh.js",
    "/icon.svg",
]
ACTIONS = {
    "/retry": {"id": "1"},
    "/discard": {"id": "1"},
    "/cancel": {"id": "2"},
    "/run-now": {"id": "2"},
    "/pause": {"queue": "mail"},
    "/resume": {"queue": "mail"},
}


def operator(environ) -> bool:
    return environ.get("HTTP_X_OPERATOR") == "yes"


@pytest.fixture
def client(connect):
    """A browser of the dashboard, mounted at the root, whose requests get in when they carry OPERATOR."""
    return Client(jobs.web.app(connect, authorize=operator))


def get(client, path, **options):
    return client.get(path, environ_base=OPERATOR, **options)


def posted(client, path, data, **options):
    """POSTs `data` with the CSRF token of a page the client read first, and follows the action back to the page it
    names (the form's `next`, else the action's own default), which says what it did."""
    page = get(client, "/")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text) or re.search(r"jobs_csrf=([^;]+)", str(page.headers))
    return client.post(
        path, data={"csrf": token.group(1), **data}, environ_base=OPERATOR, follow_redirects=True, **options
    )


def shelved(db, queue="mail", args=None) -> int:
    """Queues a job that fails for good on its first attempt, works it at T, and returns its id."""
    job = jobs.later(db, queue, "doomed", args or {}, T)
    assert job is not None, "queued"
    outcome = jobs.worked(db, queue, {"doomed": doomed}, T)
    assert outcome and outcome.startswith("failed doomed"), outcome
    return job


def everything(db) -> tuple:
    """Every row the dashboard could change, to compare before and after."""
    return (
        db.execute("SELECT * FROM jobs ORDER BY id").fetchall(),
        db.execute("SELECT * FROM job_paused_queues ORDER BY queue").fetchall(),
        db.execute("SELECT * FROM job_batches ORDER BY id").fetchall(),
        db.execute("SELECT * FROM job_schedules ORDER BY key").fetchall(),
    )


NIGHTLY = jobs.every("nightly", cron="17 3 * * *", queue="mail", name="note")
HOURLY = jobs.every("hourly", every=3600, queue="mail", name="note")


@pytest.fixture
def table(db):
    """A failed job (1), a waiting one (2), a batch, a paused queue, and a recorded schedule."""
    shelved(db, args={"link": SECRET})
    jobs.later(db, "mail", "note", {}, T)
    jobs.batch(db, "reports", [("note", {}), ("note", {})])
    jobs.paused(db, "reports")
    db.execute("TRUNCATE job_schedules")
    fired(db, [NIGHTLY])  # records it, as a worker holding it does
    return db


def test_the_app_is_not_built_without_a_way_to_authorize(connect, db):
    with pytest.raises(TypeError, match="authorize"):
        jobs.web.app(connect)
    assert Client(jobs.web.app(connect, development=True)).get("/").status_code == 200


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_refused_without_authorization(client, table, path):
    answer = client.get(path)
    assert answer.status_code == 403
    assert SECRET not in answer.text


@pytest.mark.parametrize("path, data", ACTIONS.items())
def test_every_action_is_refused_without_authorization_and_changes_nothing(client, table, path, data):
    before = everything(table)
    token = re.search(r'name="csrf" value="([^"]+)"', get(client, "/").text).group(1)
    assert client.post(path, data={"csrf": token, **data}).status_code == 403
    assert everything(table) == before


@pytest.mark.parametrize("path, data", ACTIONS.items())
@pytest.mark.parametrize("token", [None, "", "x" * 43])
def test_every_action_is_refused_without_its_csrf_token_and_changes_nothing(client, table, path, data, token):
    before = everything(table)
    get(client, "/")  # the client holds the cookie; the form does not repeat it
    answer = client.post(path, data=data | ({} if token is None else {"csrf": token}), environ_base=OPERATOR)
    assert answer.status_code == 403
    assert "CSRF" in answer.text
    assert everything(table) == before


def test_a_get_changes_nothing_and_an_action_answers_only_a_post(client, table):
    before = everything(table)
    for path in PAGES + ["/job/2", "/failed?queue=mail", "/job/1?args=shown"]:
        assert get(client, path).status_code == 200, path
    for path in ACTIONS:
        answer = get(client, path, query_string=ACTIONS[path])
        assert (answer.status_code, answer.headers["Allow"]) == (405, "POST")
    assert everything(table) == before


BAD_PAGES = [
    "/job/abc",
    "/job/0",
    "/job/-1",
    "/job/99999999999999999999",
    "/job/",
    "/job/7",
    "/failed?after=x",
    "/jobs?state=failed&after=1,2",
    "/failed?limit=0",
    "/failed?limit=100000",
    "/batches?after=%FF",
    "/elsewhere",
    "/job/%00",
    "/schedules/nightly",
    "/schedules/",
]
LONG_NUMBER = "9" * 5000  # past the 4,300 digits Python's int() reads from text: a ValueError, not a 4xx, if unchecked


@pytest.mark.parametrize("path", BAD_PAGES)
def test_a_bad_address_gets_a_4xx_page_that_says_what_was_wrong(client, table, path):
    answer = get(client, path)
    assert 400 <= answer.status_code < 500
    assert 'class="note error"' in answer.text


@pytest.mark.parametrize(
    "path",
    [
        f"/job/{LONG_NUMBER}",
        f"/failed?worker={LONG_NUMBER}",
        f"/failed?limit={LONG_NUMBER}",
        f"/batches?after={LONG_NUMBER}",
    ],
)
def test_a_number_of_thousands_of_digits_gets_a_4xx_page_not_a_500(client, table, path):
    answer = get(client, path)
    assert 400 <= answer.status_code < 500
    assert "must be a whole number" in answer.text


BAD_FORMS = [
    ("/retry", {}),
    ("/retry", {"id": "abc"}),
    ("/retry", {"id": "99999999999999999999"}),
    ("/discard", {"id": "-3"}),
    ("/cancel", {"id": ""}),
    ("/pause", {"queue": ""}),
    ("/resume", {}),
    ("/pause", {"queue": "x" * 201}),
    ("/retry", {"all_shown": "1"}),
    ("/retry", {"id": LONG_NUMBER}),
]


@pytest.mark.parametrize("path, data", BAD_FORMS)
def test_a_bad_form_gets_a_400_page_and_changes_nothing(client, table, path, data):
    before = everything(table)
    answer = posted(client, path, data)
    assert answer.status_code == 400, answer.text
    assert everything(table) == before


def test_a_form_too_large_to_read_is_refused(client, table):
    answer = posted(client, "/retry", {"id": "1" * (jobs.web.request.FORM_MAX + 1)})
    assert answer.status_code == 413


def test_the_queues_page_shows_each_queue_s_figures_and_refreshes_its_table_in_place(client, table):
    page = get(client, "/")
    assert '<script src="/refresh.js"></script>' in page.text
    assert 'data-refresh="/queues.fragment"' in page.text
    fragment = get(client, "/queues.fragment").text
    assert fragment in page.text and not fragment.startswith("<!doctype")
    cells = re.findall(r'<tr><td data-label="Queue">(\w+)</td>(.*?)</tr>', fragment)
    assert [name for name, _ in cells] == ["mail", "reports"]
    assert [re.sub(r"<[^>]+>", " ", cells[0][1]).split()[:4], "Resume" in cells[1][1]] == [["1", "0", "0", "1"], True]


def test_a_queue_with_no_jobs_yet_is_paused_by_name_from_the_queues_page(client, db):
    page = get(client, "/").text
    assert "No queue yet" in page
    assert '<form class="actions" method="post" action="/pause">' in page and 'name="queue" required' in page
    assert "Queue mail paused" in posted(client, "/pause", {"queue": "mail"}).text
    assert jobs.paused_queues(db) == {"mail"}
    assert "Resume</button>" in get(client, "/").text


def test_the_shelf_shows_reasons_and_the_traceback_on_demand_never_the_arguments(client, db):
    first = shelved(db, args={"link": SECRET})
    second = shelved(db)
    page = get(client, "/failed").text
    assert page.index(f"/job/{second}") < page.index(f"/job/{first}"), "newest first"
    assert "<details><summary>traceback</summary><pre>Traceback" in page
    assert SECRET not in page


def test_the_shelf_pages_by_keyset(client, db):
    ids = [shelved(db) for _ in range(3)]
    first = get(client, "/failed?limit=2").text
    assert re.findall(r'name="id" value="(\d+)"', first) == [str(ids[2]), str(ids[1])]
    assert f'href="/failed?after={ids[1]}"' in first
    assert re.findall(r'name="id" value="(\d+)"', get(client, f"/failed?after={ids[1]}").text) == [str(ids[0])]


def test_a_job_s_page_hides_its_arguments_until_asked(client, table):
    assert SECRET not in get(client, "/job/1").text
    assert SECRET in get(client, "/job/1?args=shown").text
    assert "job 99 is not in the table" in get(client, "/job/99").text


def test_retry_takes_one_job_a_selection_or_all_shown_and_says_what_it_changed(client, db):
    ids = [shelved(db) for _ in range(4)]
    assert "1 of 1 back in the queue" in posted(client, "/retry", {"id": str(ids[0])}).text
    assert "1 of 2 back in the queue" in posted(client, "/retry", {"id": [str(ids[0]), str(ids[1])]}).text
    answer = posted(client, "/retry", {"all_shown": "1", "shown": [str(ids[2]), str(ids[3])], "id": str(ids[2])})
    assert "2 of 2 back in the queue" in answer.text
    assert jobs.failed(db) == []


def test_discard_says_how_many_it_deleted(client, db):
    ids = [shelved(db) for _ in range(2)]
    answer = posted(client, "/discard", {"id": [str(ids[0]), "999"]})
    assert "1 of 2 discarded" in answer.text and "1 were not on the shelf" in answer.text
    assert [j["id"] for j in jobs.failed(db)] == [ids[1]]


def test_cancel_pause_and_resume_say_what_they_changed(client, table):
    assert "on the failed shelf as cancelled" in posted(client, "/cancel", {"id": "2"}).text
    assert "Queue mail paused" in posted(client, "/pause", {"queue": "mail"}).text
    assert "Queue mail was paused already" in posted(client, "/pause", {"queue": "mail"}).text
    assert "Queue reports resumed" in posted(client, "/resume", {"queue": "reports"}).text
    assert jobs.paused_queues(table) == {"mail"}
    assert [j["id"] for j in jobs.failed(table)] == [2, 1]


def test_cancel_of_a_running_job_says_that_one_past_its_point_of_no_return_runs_on(client, db):
    running = jobs.later(db, "mail", "deliver", {}, T)
    db.execute("UPDATE jobs SET claim = 1, attempts = 1, run_at = %s WHERE id = %s", (jobs.now_ms() + 600_000, running))
    answer = posted(client, "/cancel", {"id": str(running)}).text
    assert f"Running: {running}." in answer and "unless it is past its point of no return" in answer
    assert "within a heartbeat" not in answer, "a performer past its point of no return is not stopped"


def test_the_batches_page_shows_each_batch_s_progress(client, table):
    jobs.worked(table, "reports", {"note": lambda *_: None}, jobs.now_ms())
    page = get(client, "/batches").text
    assert '<progress value="1" max="2"></progress> 1 of 2' in page


def test_the_schedules_page_shows_each_recorded_schedule_with_its_last_and_next_run(connect, table):
    table.execute("UPDATE job_schedules SET last_tick = '2026-11-30 03:17:00+00' WHERE key = 'nightly'")
    held = Client(jobs.web.app(connect, authorize=operator, schedules=[NIGHTLY, HOURLY]))
    page = get(held, "/schedules").text
    rows = re.findall(r'<tr><td data-label="Schedule">(\w+)</td>(.*?)</tr>', page)
    assert [key for key, _ in rows] == ["hourly", "nightly"], "every schedule, the code's not yet recorded too"
    hourly, nightly = [re.findall(r'data-label="([^"]+)">([^<]*)<', cells) for _, cells in rows]
    assert dict(nightly)["Runs"] == "17 3 * * * (UTC)"
    assert dict(nightly)["Last run"] == "2026-11-30 03:17:00 UTC"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d 03:17:00 UTC", dict(nightly)["Next run"])
    assert (dict(hourly)["Runs"], dict(hourly)["Last run"], dict(hourly)["Last seen"]) == ("every 3600 s", "-", "-")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:00:00 UTC", dict(hourly)["Next run"])
    assert 'href="/schedules">Schedules</a>' in page


def test_the_schedules_page_without_the_code_s_schedules_shows_what_is_recorded(client, connect, table):
    page = get(client, "/schedules").text
    assert '<td data-label="Schedule">nightly</td><td data-label="Runs">17 3 * * * (UTC)</td>' in page
    assert "<th>Next run</th>" not in page and "handed the code's schedules" in page
    lost = Client(jobs.web.app(connect, authorize=operator, schedules=[HOURLY]))
    assert "no longer held by this code" in get(lost, "/schedules").text


def test_the_app_refuses_schedules_not_made_by_every(connect):
    with pytest.raises(TypeError, match="jobs.every"):
        jobs.web.app(connect, development=True, schedules=["nightly"])


def test_the_workers_page_shows_each_worker_s_last_beat_as_an_age(client, db):
    now = jobs.now_ms()
    db.execute(
        "INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at) "
        "VALUES (7, 'box', 42, '{mail}', 2, 30000, 1, %s, %s)",
        (now - 3_600_000, now - 150_000),
    )
    page = get(client, "/workers")
    assert page.status_code == 200
    assert re.search(r'data-label="Last beat">2 min ago<', page.text)


def test_metrics_give_each_queue_s_figures_and_the_worker_s_counters(connect, table):
    class Held:  # what the dashboard reads of a worker
        counts = jobs.Counts(processed=7, failed=1)
        queues, paused = ["mail", "reports"], {"reports"}
        pulse = Pulse()

    answer = Client(jobs.web.app(connect, authorize=operator, worker=Held())).get("/metrics", environ_base=OPERATOR)
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    lines = answer.text.splitlines()
    assert 'jobs_count{queue="mail",state="failed"} 1' in lines
    assert 'jobs_count{queue="mail",state="due"} 1' in lines
    assert 'jobs_queue_paused{queue="reports"} 1' in lines
    assert 'jobs_worker_attempts_total{outcome="processed"} 7' in lines
    assert ['jobs_worker_queue_paused{queue="mail"} 0', 'jobs_worker_queue_paused{queue="reports"} 1'] == [
        line for line in lines if line.startswith("jobs_worker_queue_paused")
    ]
    assert all(line.startswith("#") or re.fullmatch(r"[a-z_]+\{[^}]*\} [0-9.]+", line) for line in lines)


def test_a_database_out_of_reach_gets_a_503_page():
    def unreachable():
        return psycopg.connect("postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=5")

    answer = Client(jobs.web.app(unreachable, development=True)).get("/")
    assert answer.status_code == 503
    assert "could not be reached" in answer.text


def test_the_dashboard_links_from_where_it_is_mounted(connect, table):
    answer = Client(jobs.web.app(connect, authorize=operator)).get(
        "/", base_url="http://localhost/jobs/", environ_base=OPERATOR
    )
    assert 'href="/jobs/style.css"' in answer.text and 'action="/jobs/resume"' in answer.text
    assert "Path=/jobs;" in answer.headers["Set-Cookie"]


def test_a_csrf_value_the_client_chose_itself_is_refused(client, table):
    chosen = "c" * 43  # as long as a real token: the cookie and the form agree, but no server signed it
    before = everything(table)
    client.set_cookie("jobs_csrf", chosen)
    answer = client.post("/pause", data={"csrf": chosen, "queue": "mail"}, environ_base=OPERATOR)
    assert answer.status_code == 403
    assert everything(table) == before


def test_a_csrf_token_taken_from_another_session_is_refused(connect, table):
    def session(environ):
        return environ.get("HTTP_X_SESSION", "")

    dashboard = jobs.web.app(connect, authorize=operator, secret="the app's secret", session=session)
    mallory, ada = Client(dashboard), Client(dashboard)
    page = mallory.get("/", environ_base={**OPERATOR, "HTTP_X_SESSION": "mallory"})
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    ada.set_cookie("jobs_csrf", mallory.get_cookie("jobs_csrf").value)  # planted, as a neighbouring site could

    refused = ada.post("/pause", data={"csrf": token, "queue": "q"}, environ_base={**OPERATOR, "HTTP_X_SESSION": "ada"})
    taken = mallory.post(
        "/pause", data={"csrf": token, "queue": "q"}, environ_base={**OPERATOR, "HTTP_X_SESSION": "mallory"}
    )

    assert (refused.status_code, taken.status_code) == (403, 303)


def test_a_form_from_another_origin_is_refused_before_its_token_is_read(client, table):
    before = everything(table)
    token = re.search(r'name="csrf" value="([^"]+)"', get(client, "/").text).group(1)
    for headers in (
        {"HTTP_ORIGIN": "https://elsewhere.example"},
        {"HTTP_ORIGIN": "null", "HTTP_SEC_FETCH_SITE": "cross-site"},
        {"HTTP_SEC_FETCH_SITE": "cross-site"},
        {"HTTP_SEC_FETCH_SITE": "same-site"},
    ):
        answer = client.post("/pause", data={"csrf": token, "queue": "mail"}, environ_base={**OPERATOR, **headers})
        assert answer.status_code == 403, headers
        assert "another site" in answer.text
    assert everything(table) == before
    same = client.post(
        "/pause", data={"csrf": token, "queue": "mail"}, environ_base={**OPERATOR, "HTTP_ORIGIN": "http://localhost"}
    )
    hidden = client.post(
        "/resume",
        data={"csrf": token, "queue": "mail"},  # no-referrer: Origin null, but same-origin
        environ_base={**OPERATOR, "HTTP_ORIGIN": "null", "HTTP_SEC_FETCH_SITE": "same-origin"},
    )
    assert (same.status_code, hidden.status_code) == (303, 303)


@pytest.mark.parametrize(
    "options, base_url", [({"origin": "https://jobs.example"}, "http://localhost"), ({}, "https://localhost")]
)
def test_the_csrf_cookie_is_secure_when_the_dashboard_is_served_over_https(connect, table, options, base_url):
    answer = Client(jobs.web.app(connect, authorize=operator, **options)).get(
        "/", base_url=base_url, environ_base=OPERATOR
    )
    assert "; Secure" in answer.headers["Set-Cookie"]
    assert "; Secure" not in get(Client(jobs.web.app(connect, authorize=operator)), "/").headers["Set-Cookie"]


def test_no_page_may_be_framed_even_by_a_browser_older_than_csp_2(client, table):
    assert get(client, "/").headers["X-Frame-Options"] == "DENY"


def test_a_request_authorize_refuses_is_answered_by_the_app_s_own_refusal_when_handed_one(connect, table):
    def refused(environ, start_response):
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [f"sign in first to see {environ['PATH_INFO']}".encode()]

    browser = Client(jobs.web.app(connect, authorize=operator, refused=refused))
    before = everything(table)
    assert (browser.get("/failed").status_code, browser.get("/failed").text) == (403, "sign in first to see /failed")
    assert browser.post("/pause", data={"queue": "mail"}).status_code == 403
    assert get(browser, "/failed").status_code == 200
    assert everything(table) == before


def test_every_page_names_the_dashboard_s_own_icon_which_its_policy_allows(client, table):
    page = get(client, "/")
    assert '<link rel="icon" href="/icon.svg">' in page.text
    assert "img-src 'self'" in page.headers["Content-Security-Policy"]
    icon = get(client, "/icon.svg")
    assert (icon.status_code, icon.headers["Content-Type"]) == (200, "image/svg+xml")


def test_retry_of_a_job_on_a_paused_queue_says_the_queue_is_paused(client, db):
    job = shelved(db)
    jobs.paused(db, "mail")
    answer = posted(client, "/retry", {"id": str(job)}).text
    assert "1 of 1 back in the queue" in answer
    assert "Queue mail is paused: they wait until it is resumed." in answer


def test_a_job_s_page_says_which_run_each_reason_belongs_to_after_a_retry(client, db):
    job = shelved(db)
    jobs.retried(db, job, now=T)
    jobs.worked(db, "mail", {"doomed": doomed}, T)
    page = re.sub(r' <span class="muted">\([^)]*\)</span>', "", get(client, f"/job/{job}").text)
    assert "<h3>Run 1</h3><ol><li>doomed</li></ol><h3>Run 2 (this one)</h3><ol><li>doomed</li></ol>" in page


def test_a_job_retried_from_the_shelf_says_its_new_run_has_no_failed_attempt_yet(client, db):
    job = shelved(db)
    jobs.retried(db, job, now=T)
    page = re.sub(r' <span class="muted">\([^)]*\)</span>', "", get(client, f"/job/{job}").text)
    assert "<h3>Run 2 (this one)</h3><p>No attempt of this run has failed yet.</p>" in page
    assert "<ol></ol>" not in page
