"""The queues page's pulse: inline SVG charts, drawn with the standard library from job_pulse's minutes.

For each queue, the last hour minute by minute and the last day in bins of DAY_BIN minutes:
the jobs queued, finished, retried and failed, and the claims' wait from due (median and
p95, estimated from the buckets of pulse.WAIT_BUCKETS). Each series has a strip of its
own (small multiples), labelled with its total, so no line hides under another; the counts
share one scale and the waits another. A series that stayed at nought is drawn in a neutral
colour, and each point's values show on hover (an SVG title, no script). Each chart has a
viewBox and no width of its own, so it fills a phone's screen as a desktop's; every text
is escaped.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..store.pulse import MINUTE, Tally, quantile
from .html import escaped

HOUR = 60  # minutes the hour's chart shows, one point each
DAY_BIN = 10  # minutes summed into each point of the day's chart
DAY = 24 * 60  # minutes the day's chart shows
WIDTH, MARGIN = 400, 6  # viewBox units: the chart's width, and its edges
LEFT = 110  # viewBox units: where the lines start, right of each strip's label and total
STRIP, ROW = 24, 30  # viewBox units: a series' strip, and the strip with the space below it
TEXT = 12  # viewBox units: a label's size, as style.css sets it; the time axis's labels take a line of TEXT + 2 below
HEAD = TEXT + 8  # viewBox units: the line above each group of strips that says its scale
SERIES = ("queued", "finished", "retried", "failed")  # the counts drawn, each a line of its class
WAITS = (("median", 0.5), ("p95", 0.95))  # the waits drawn, each a line of its class


@dataclass
class Window:
    """What one chart shows: its title, how many minutes, and how many per point."""

    title: str
    minutes: int
    step: int

    @property
    def points(self) -> int:
        return self.minutes // self.step


WINDOWS = (Window("Last hour, per minute", HOUR, 1), Window(f"Last day, per {DAY_BIN} minutes", DAY, DAY_BIN))


def section(minutes: Iterable[tuple[int, str, Tally]], now: int) -> str:
    """The pulse of every queue that counted a job in the last day; `now` is the database's moment (ms)."""
    by_queue: dict[str, list[tuple[int, Tally]]] = {}
    for minute, queue, tally in minutes:
        by_queue.setdefault(queue, []).append((minute, tally))
    if not by_queue:
        return (
            '<section class="pulse"><h2>Pulse</h2><p>No worker has counted a job here in the last day: '
            "workers add their counts every few seconds.</p></section>"
        )
    figures = "".join(queue_pulse(queue, by_queue[queue], now) for queue in sorted(by_queue))
    return f'<section class="pulse"><h2>Pulse</h2>{figures}</section>'


def queue_pulse(queue: str, minutes: list[tuple[int, Tally]], now: int) -> str:
    """One queue's heading and its two charts."""
    charts = "".join(chart(queue, window, binned(minutes, now, window), start(now, window)) for window in WINDOWS)
    return f'<div class="pulse-queue"><h3>{escaped(queue)}</h3><div class="charts">{charts}</div></div>'


def start(now: int, window: Window) -> int:
    """The moment (ms) the window's first point starts: the last point holds the minute of `now`."""
    return now - now % MINUTE + MINUTE - window.minutes * MINUTE


def binned(minutes: list[tuple[int, Tally]], now: int, window: Window) -> list[Tally]:
    """The window's points, oldest first, the last one holding the minute of `now` (still counting)."""
    first = start(now, window)
    end = first + window.minutes * MINUTE
    points = [Tally() for _ in range(window.points)]
    for minute, tally in minutes:
        if first <= minute < end:
            points[(minute - first) // (window.step * MINUTE)].add(tally)
    return points


def chart(queue: str, window: Window, points: list[Tally], first: int) -> str:
    """A figure: the window's totals in words, then its SVG, a strip per series (small multiples, so no line hides
    another), the counts' strips on one scale and the waits' on another, each point's values on hover.

    `first` is the moment (ms) the first point starts at. A series that stayed at nought is
    drawn in the neutral colour: a quiet queue's failed line is not red.
    """
    total = Tally()
    for point in points:
        total.add(point)
    said = summary(total)
    unit = "min" if window.step == 1 else f"{window.step} min"
    counts = [[float(getattr(point, name)) for point in points] for name in SERIES]
    top = max((value for series in counts for value in series), default=0.0)
    waits = [[quantile(point.waits, share) for point in points] for _, share in WAITS]
    longest = max((value for series in waits for value in series if value is not None), default=0.0)
    lower = MARGIN + HEAD + len(SERIES) * ROW + HEAD
    strips = [
        *(
            strip(series, top, MARGIN + HEAD + index * ROW, name, f"{name} {getattr(total, name):,}")
            for index, (series, name) in enumerate(zip(counts, SERIES, strict=True))
        ),
        *(
            strip(series, longest, lower + index * ROW, name, f"{name} {said_wait(total, share)}")
            for index, (series, (name, share)) in enumerate(zip(waits, WAITS, strict=True))
        ),
    ]
    height = lower + len(WAITS) * ROW + TEXT + 2 + MARGIN
    svg = (
        f'<svg class="pulse-chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escaped(f"{queue}, {window.title.lower()}: {said}")}">'
        f'<text x="{MARGIN}" y="{MARGIN + TEXT}">{escaped(f"jobs / {unit}, up to {top:,.0f}")}</text>'
        f'<text x="{MARGIN}" y="{lower - HEAD + TEXT}">{escaped(f"wait from due, up to {duration(longest)}")}</text>'
        f"{''.join(strips)}{hovers(points, window, first, MARGIN + HEAD, lower + len(WAITS) * ROW)}"
        f'<text x="{LEFT}" y="{height - MARGIN}">{escaped(since(window))}</text>'
        f'<text x="{WIDTH - MARGIN}" y="{height - MARGIN}" text-anchor="end">now</text>'
        "</svg>"
    )
    caption = f'{escaped(window.title)}<br><span class="muted">{escaped(said)}</span>'
    return f"<figure><figcaption>{caption}</figcaption>{svg}</figure>"


def strip(values: Sequence[float | None], top_value: float, top: float, name: str, label: str) -> str:
    """One series' strip: its label and total at the left, its baseline, and its line, neutral when all nought."""
    quiet = all(not value for value in values)
    bottom = top + STRIP
    return (
        f'<text class="label" x="{MARGIN}" y="{bottom - 2}">{escaped(label)}</text>'
        f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH - MARGIN}" y2="{bottom}"/>'
        + polyline(values, top_value, top, "zero" if quiet else name)
    )


def hovers(points: list[Tally], window: Window, first: int, top: float, bottom: float) -> str:
    """A column over each point, across every strip, whose title says that point's moment and values on hover."""
    step = (WIDTH - MARGIN - LEFT) / max(1, len(points) - 1)
    columns = []
    for index, point in enumerate(points):
        start = first + index * window.step * MINUTE
        moment = datetime.fromtimestamp(start / 1000, UTC).strftime("%H:%M UTC")
        x = max(LEFT, LEFT + index * step - step / 2)
        width = min(step, WIDTH - MARGIN - x)
        columns.append(
            f'<rect class="hover" x="{x:.1f}" y="{top}" width="{width:.1f}" height="{bottom - top}">'
            f"<title>{escaped(f'{moment}, {unit_of(window)}: {summary(point)}')}</title></rect>"
        )
    return "".join(columns)


def unit_of(window: Window) -> str:
    """What one point of a window spans: "1 min", "10 min"."""
    return f"{window.step} min"


def said_wait(total: Tally, share: float) -> str:
    """A window's wait at `share` in words, or "-" with no claim."""
    value = quantile(total.waits, share)
    return "-" if value is None else duration(value)


def since(window: Window) -> str:
    """The label of a chart's left edge: -60 min, -24 h."""
    return f"-{window.minutes} min" if window.minutes <= HOUR else f"-{window.minutes // 60} h"


def summary(total: Tally) -> str:
    """A window's totals in words: its counts, then the median and p95 of its claims' waits."""
    counts = ", ".join(f"{getattr(total, name):,} {name}" for name in SERIES)
    median, p95 = (quantile(total.waits, share) for _, share in WAITS)
    if median is None or p95 is None:
        return f"{counts}; no claim"
    return f"{counts}; wait median {duration(median)}, p95 {duration(p95)}"


def polyline(values: Sequence[float | None], top_value: float, top: float, name: str) -> str:
    """One series as lines across its strip, broken where a point has no value (a minute with no claim)."""
    step = (WIDTH - MARGIN - LEFT) / max(1, len(values) - 1)
    runs: list[list[str]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        y = top + STRIP - (value / top_value * STRIP if top_value else 0.0)
        runs[-1].append(f"{LEFT + index * step:.1f},{y:.1f}")
    return "".join(line(run, name) for run in runs if run)


def line(run: list[str], name: str) -> str:
    """A run of points as a polyline; a lone point, which a polyline would not show, as a dot."""
    if len(run) == 1:
        x, y = run[0].split(",")
        return f'<circle class="{name}" cx="{x}" cy="{y}" r="2"/>'
    return f'<polyline class="{name}" points="{" ".join(run)}"/>'


def duration(ms: float) -> str:
    """A wait as people read it: 12 ms, 3.4 s, 7 min."""
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.0f} min"
