"""The workers page says what each worker's schema step is in words, and names a worker by the last digits of its
random id, the whole id on hover, as every page that names a worker does."""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import claims, schema
from jobs.store.claims import Hold
from tests.jobs.test_web import T, get, operator
from tests.jobs.test_web_queues import recorded_worker

LONG_ID = 4_611_686_018_427_387_904  # a worker's id is random up to 2**63: 19 digits


@pytest.fixture
def client(connect):
    return Client(jobs.web.app(connect, authorize=operator))


def test_the_workers_page_says_the_schema_step_against_this_code_s(client, db):
    recorded_worker(db, LONG_ID, ["mail"], 2)
    db.execute("UPDATE job_workers SET version = %s", (schema.VERSION,))
    recorded_worker(db, 7, ["mail"], 2)
    db.execute("UPDATE job_workers SET version = 1 WHERE id = 7")
    page = get(client, "/workers").text
    steps = re.findall(r'data-label="Schema step">([^<]*)<', page)
    assert sorted(steps) == sorted([f"{schema.VERSION}, as this code", f"1, behind this code's {schema.VERSION}"])
    assert "<th>Version</th>" not in page and "the last step of the queue's tables" in page


def test_a_worker_is_named_by_the_last_digits_of_its_id_with_the_whole_id_on_hover(client, db):
    recorded_worker(db, LONG_ID, ["mail"], 2)
    job = jobs.later(db, "mail", "note", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=LONG_ID))
    whole = f'<span title="{LONG_ID}">…{str(LONG_ID)[-6:]}</span>'
    assert f'data-label="Worker">{whole}</td>' in get(client, "/workers").text
    assert f">worker {whole}</a>" in get(client, "/jobs?state=in_work").text
    assert f">worker {whole}</a>" in get(client, f"/job/{job}").text
    assert f"worker={LONG_ID}" in get(client, f"/job/{job}").text, "the link carries the whole id"
