"""The queues page's pulse (jobs/web/chart.py): drawn from job_pulse as inline SVG for the last hour and day,
every text escaped, and the metrics' wait histogram beside the other figures."""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store.pulse import MINUTE, WAIT_BUCKETS, Pulse, Tally, Waits
from jobs.web import chart

OPERATOR = {"HTTP_X_OPERATOR": "yes"}


def operator(environ) -> bool:
    return environ.get("HTTP_X_OPERATOR") == "yes"


@pytest.fixture
def client(connect):
    return Client(jobs.web.app(connect, authorize=operator))


@pytest.fixture
def rollup(db):
    db.execute("TRUNCATE job_pulse")
    return db


def this_minute() -> int:
    now = jobs.now_ms()
    return now - now % MINUTE


def counted(db, minute, queue, *, queued=0, finished=0, retried=0, failed=0, waits=None):
    """Writes one row of job_pulse, as the workers' flushes add up to."""
    waits = waits or {}
    db.execute(
        "INSERT INTO job_pulse (minute, queue, queued, finished, retried, failed, waits) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (minute, queue, queued, finished, retried, failed, [waits.get(i, 0) for i in range(len(WAIT_BUCKETS) + 1)]),
    )


def test_the_queues_page_draws_each_queue_s_last_hour_and_day(rollup, client):
    now = this_minute()
    counted(rollup, now, "mail", queued=3, finished=2, failed=1, waits={0: 10})
    counted(rollup, now - 30 * MINUTE, "mail", queued=1, finished=1, waits={0: 0, 1: 1})
    counted(rollup, now - 3 * 60 * MINUTE, "mail", finished=5, retried=2)  # in the day, not in the hour
    page = client.get("/", environ_base=OPERATOR).text
    hour, day = re.findall(r'<span class="muted">([^<]*)</span></figcaption>', page)
    assert hour == "4 queued, 3 finished, 0 retried, 1 failed; wait median 6 ms, p95 28 ms"
    assert day.startswith("4 queued, 8 finished, 2 retried, 1 failed; ")
    charts = re.findall(r"<svg [^>]*>", page)
    assert len(charts) == 2
    assert all('viewBox="0 0 ' in svg and "width=" not in svg for svg in charts), "sized by the page, a phone's too"
    assert page.count('<polyline class="finished"') + page.count('<circle class="finished"') >= 2


def test_minutes_older_than_a_day_are_not_drawn(rollup, client):
    counted(rollup, this_minute() - (chart.DAY + 5) * MINUTE, "mail", finished=9)
    page = client.get("/", environ_base=OPERATOR).text
    assert "No worker has counted a job here in the last day" in page
    assert "<svg" not in page


def test_a_queue_s_name_is_text_in_the_chart_never_markup(rollup, client):
    counted(rollup, this_minute(), '<img src=x onerror="alert(1)">', finished=1)
    page = client.get("/", environ_base=OPERATOR).text
    assert "<img src=x" not in page
    assert "<h3>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</h3>" in page
    assert 'aria-label="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;, last hour, per minute: 0 queued' in page


def test_a_minute_with_no_claim_breaks_the_wait_line():
    points = [Tally(waits=[1] + [0] * len(WAIT_BUCKETS)), Tally(), Tally(waits=[1] + [0] * len(WAIT_BUCKETS))]
    drawn = chart.polyline([chart.quantile(point.waits, 0.5) for point in points], 10.0, 0, "median")
    assert drawn.count("<circle") == 2 and "<polyline" not in drawn, "two lone points, no line across the gap"


def test_the_day_s_points_sum_ten_minutes_each():
    now = 1_000 * 60 * MINUTE + 30_000  # half a minute into a minute
    minutes = [(now - now % MINUTE - m * MINUTE, Tally(finished=1)) for m in range(25)]
    points = chart.binned(minutes, now, chart.WINDOWS[1])
    assert len(points) == chart.DAY // chart.DAY_BIN
    assert [point.finished for point in points[-3:]] == [5, 10, 10], "the last bin ends with the minute of now"


def test_the_metrics_leave_the_navigation_and_the_queues_page_links_them(rollup, client):
    page = client.get("/", environ_base=OPERATOR).text
    header = page.split("<header>")[1].split("</header>")[0]
    assert "/metrics" not in header
    assert '<a href="/metrics">metrics in Prometheus text format</a>' in page
    assert client.get("/metrics", environ_base=OPERATOR).headers["Content-Type"].startswith("text/plain")


def test_the_metrics_give_the_worker_s_waits_as_a_histogram(connect):
    class Held:  # what the dashboard reads of a worker
        counts = jobs.Counts()
        queues, paused = ["mail"], set()
        pulse = Pulse()

    Held.pulse.waits["mail"] = Waits(buckets=[2, 1] + [0] * (len(WAIT_BUCKETS) - 2) + [1], total=7 + 30 + 3_600_000)
    answer = Client(jobs.web.app(connect, authorize=operator, worker=Held())).get("/metrics", environ_base=OPERATOR)
    lines = answer.text.splitlines()
    assert "# TYPE jobs_worker_wait_seconds histogram" in lines
    assert 'jobs_worker_wait_seconds_bucket{queue="mail",le="0.01"} 2' in lines
    assert 'jobs_worker_wait_seconds_bucket{queue="mail",le="0.05"} 3' in lines, "cumulative"
    assert 'jobs_worker_wait_seconds_bucket{queue="mail",le="1800"} 3' in lines
    assert 'jobs_worker_wait_seconds_bucket{queue="mail",le="+Inf"} 4' in lines
    assert 'jobs_worker_wait_seconds_count{queue="mail"} 4' in lines
    assert 'jobs_worker_wait_seconds_sum{queue="mail"} 3600.037' in lines


def test_a_series_that_stayed_at_nought_is_drawn_neutral_and_no_series_hides_under_another(rollup, client):
    now = this_minute()
    counted(rollup, now, "mail", queued=3, finished=3, waits={0: 3})
    counted(rollup, now - MINUTE, "mail", queued=2, finished=2, waits={0: 2})
    hour = re.findall(r"<figure>.*?</figure>", client.get("/", environ_base=OPERATOR).text)[0]
    assert '<polyline class="failed"' not in hour and '<polyline class="retried"' not in hour, "nought is not red"
    assert hour.count('<polyline class="zero"') == 2, "retried and failed, each drawn, in the neutral colour"
    queued, finished = (
        re.search(rf'<polyline class="{name}" points="([^"]+)"', hour).group(1) for name in ("queued", "finished")
    )
    assert queued != finished, "equal counts, yet each line in its own strip: neither hides the other"
    labels = re.findall(r'<text class="label"[^>]*>([^<]+)</text>', hour)
    assert labels[:4] == ["queued 5", "finished 5", "retried 0", "failed 0"]


def test_each_point_s_values_show_on_hover(rollup, client):
    now = this_minute()
    counted(rollup, now, "mail", queued=3, finished=2, failed=1, waits={0: 3})
    page = client.get("/", environ_base=OPERATOR).text
    hour, day = re.findall(r"<figure>.*?</figure>", page)
    titles = re.findall(r'<rect class="hover"[^>]*><title>([^<]+)</title></rect>', hour)
    assert len(titles) == chart.HOUR and len(re.findall(r'<rect class="hover"', day)) == chart.DAY // chart.DAY_BIN
    assert re.fullmatch(
        r"\d\d:\d\d UTC, 1 min: 3 queued, 2 finished, 0 retried, 1 failed; wait median \d+ ms, p95 \d+ ms", titles[-1]
    )
    assert titles[0].endswith("0 queued, 0 finished, 0 retried, 0 failed; no claim")
