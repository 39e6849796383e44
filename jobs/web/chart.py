"""The queues page's pulse: inline SVG charts, drawn with the standard library from job_pulse's minutes.

For each queue, the last hour minute by minute and the last day in bins of DAY_BIN minutes:
the jobs queued, finished, retried and failed, and the claims' wait from due (median and
p95, estimated from the buckets of pulse.WAIT_BUCKETS). Each chart has a viewBox and no
width of its own, so it fills a phone's screen as a desktop's; every text is escaped.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..store.pulse import MINUTE, Tally, quantile
from .html import escaped

HOUR = 60  # minutes the hour's chart shows, one point each
DAY_BIN = 10  # minutes summed into each point of the day's chart
DAY = 24 * 60  # minutes the day's chart shows
WIDTH, PANEL, GAP, MARGIN = 400, 90, 30, 6  # viewBox units: the width, each panel's height, between them, edges
TEXT = 12  # viewBox units: a label's size, as style.css sets it; the time axis's labels take a line of TEXT + 2 below
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
    return f'<section class="pulse"><h2>Pulse</h2>{legend()}{figures}</section>'


def legend() -> str:
    """What each line's colour stands for, once above the charts."""
    keys = [*SERIES, *(name for name, _ in WAITS)]
    names = {"median": "median wait", "p95": "p95 wait"}
    items = "".join(f'<li><span class="swatch {key}"></span>{names.get(key, key)}</li>' for key in keys)
    return f'<ul class="legend">{items}</ul>'


def queue_pulse(queue: str, minutes: list[tuple[int, Tally]], now: int) -> str:
    """One queue's heading and its two charts."""
    charts = "".join(chart(queue, window, binned(minutes, now, window)) for window in WINDOWS)
    return f'<div class="pulse-queue"><h3>{escaped(queue)}</h3><div class="charts">{charts}</div></div>'


def binned(minutes: list[tuple[int, Tally]], now: int, window: Window) -> list[Tally]:
    """The window's points, oldest first, the last one holding the minute of `now` (still counting)."""
    end = now - now % MINUTE + MINUTE
    start = end - window.minutes * MINUTE
    points = [Tally() for _ in range(window.points)]
    for minute, tally in minutes:
        if start <= minute < end:
            points[(minute - start) // (window.step * MINUTE)].add(tally)
    return points


def chart(queue: str, window: Window, points: list[Tally]) -> str:
    """A figure: the window's totals in words, then its SVG of two panels, counts above and waits below."""
    total = Tally()
    for point in points:
        total.add(point)
    said = summary(total)
    unit = "min" if window.step == 1 else f"{window.step} min"
    counts = [[float(getattr(point, name)) for point in points] for name in SERIES]
    top = max((value for series in counts for value in series), default=0.0)
    waits = [[quantile(point.waits, share) for point in points] for _, share in WAITS]
    longest = max((value for series in waits for value in series if value is not None), default=0.0)
    height = 2 * PANEL + GAP + 2 * MARGIN + TEXT + 2
    lower = MARGIN + PANEL + GAP
    lines = [
        *(polyline(series, top, MARGIN, name) for series, name in zip(counts, SERIES, strict=True)),
        *(polyline(series, longest, lower, name) for series, (name, _) in zip(waits, WAITS, strict=True)),
    ]
    svg = (
        f'<svg class="pulse-chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escaped(f"{queue}, {window.title.lower()}: {said}")}">'
        f"{frame(MARGIN)}{frame(lower)}"
        f'<text x="{MARGIN}" y="{MARGIN + TEXT}">{escaped(f"up to {top:,.0f} jobs / {unit}")}</text>'
        f'<text x="{MARGIN}" y="{lower + TEXT}">{escaped(f"wait up to {duration(longest)}")}</text>'
        f"{''.join(lines)}"
        f'<text x="{MARGIN}" y="{height - 2}">{escaped(since(window))}</text>'
        f'<text x="{WIDTH - MARGIN}" y="{height - 2}" text-anchor="end">now</text>'
        "</svg>"
    )
    caption = f'{escaped(window.title)}<br><span class="muted">{escaped(said)}</span>'
    return f"<figure><figcaption>{caption}</figcaption>{svg}</figure>"


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


def frame(top: float) -> str:
    """A panel's outline: its baseline and its top line."""
    bottom = top + PANEL
    return (
        f'<line class="axis" x1="{MARGIN}" y1="{bottom}" x2="{WIDTH - MARGIN}" y2="{bottom}"/>'
        f'<line class="grid" x1="{MARGIN}" y1="{top}" x2="{WIDTH - MARGIN}" y2="{top}"/>'
    )


def polyline(values: Sequence[float | None], top_value: float, top: float, name: str) -> str:
    """One series as lines across its panel, broken where a point has no value (a minute with no claim)."""
    step = (WIDTH - 2 * MARGIN) / max(1, len(values) - 1)
    runs: list[list[str]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        y = top + PANEL - (value / top_value * PANEL if top_value else 0.0)
        runs[-1].append(f"{MARGIN + index * step:.1f},{y:.1f}")
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
