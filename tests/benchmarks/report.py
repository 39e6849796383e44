"""What a run prints: jobs beside the plain-SQL limits with their ratios, the checks, and the goals.

The figures come in one dict filled by __main__.py; any column left out with --only
is missing from it, and its rows and goals are left out of the report.
"""

from . import asynchronous, limited, pressure, timing

# The goals of issue 7 (and of issues 12 and 15 for the shelf, 13 under pressure), each a ratio or a
# bound measured in the run itself.
DRAIN_SHARE = 0.5  # jobs' best drain, as a share of plain "claim 100 + delete" at concurrency 1
PEER_BEST = 5_900  # jobs/s: pgqueuer's best drain in the table (not measured in this run)
PEER_MULTIPLE = 2  # jobs' best drain is to be at least this many times PEER_BEST
LATENCY_MEDIAN = 0.001  # seconds, enqueue→start median with an idle worker, at most
LATENCY_P95 = 0.002  # seconds, enqueue→start 95th percentile, at most
LATENCY_GAP = 0.0004  # seconds the median may exceed the plain LISTEN-then-claim loop's
ENQUEUE_SHARE = 0.85  # `later`, one per transaction, as a share of a plain INSERT's rate
BULK_SHARE = 0.5  # `later_many` as a share of a plain COPY's rate
WRITING_SHARE = 0.8  # jobs that each INSERT a row, as a share of plain SQL's transaction per job, at each concurrency
SCALE_FACTOR = 1.5  # claim time beside the waiting rows, over the claim time on an empty table, at most
MEMORY_GROWTH = 1.1  # resident memory at the end of a drain over that at its start, at most ("flat")
STATUS_TIME = 0.050  # seconds `jobs.status` may take beside the shelf check's rows (issue 12)
PAGE_TIME = 0.100  # seconds a page of the shelf (or of the dashboard) may take beside them (issue 15)
KEPT_UP = 0.98  # jobs done a second under pressure, as a share of the rate offered, at least (issue 13)
LOCK_SHARE = 0.01  # share of the workers' backend samples waiting on a lock under pressure, below (issue 13)
MOST_WAITS = 5  # wait events listed under pressure, the most seen first


def printed(figures: dict, sizes, machine: str) -> str:
    """The whole report: what it ran on, the table, the checks and the goals, as text."""
    run = f"{machine}; {sizes.drain:,} jobs per drain, no-op jobs, best of {sizes.rounds} round(s)"
    parts = [run]
    if len(comparisons(figures, sizes)) > 1:
        parts.append(aligned(comparisons(figures, sizes)))
    if any(key in figures for key in ("scale", "memory")):
        parts.append(aligned(checks(figures, sizes)))
    if "shelf" in figures:
        parts.append(aligned(shelf_rows(figures["shelf"], sizes)))
    if "pressure" in figures:
        parts.append(aligned(pressure_rows(figures["pressure"], sizes)))
    parts.append(aligned(goals(figures)))
    return "\n\n".join(parts)


def comparisons(figures: dict, sizes) -> list[list[str]]:
    """The rows of the main table: a column of the issue, jobs' figure, a plain-SQL limit, the ratio."""
    rows = [["", "jobs", "plain SQL", "", "jobs / plain"]]
    if "plain batch 4" in figures:
        best, processes = best_drain(figures)
        setting = f"{processes} worker process" + ("es" if processes > 1 else "")
        rows.append(
            [
                "drain, best setting",
                f"{rate(best)} ({setting})",
                rate(figures["plain batch 4"]),
                "claim 100 + delete, 4 connections",
                ratio(best, figures["plain batch 4"]),
            ]
        )
        rows.append(
            [
                "",
                "",
                rate(figures["plain one 4"]),
                "claim 1 + delete, 4 connections",
                ratio(best, figures["plain one 4"]),
            ]
        )
    if "plain batch 1" in figures:
        own = figures["jobs drain 1"]
        rows.append(
            [
                "drain, concurrency 1",
                rate(own),
                rate(figures["plain batch 1"]),
                "claim 100 + delete",
                ratio(own, figures["plain batch 1"]),
            ]
        )
        rows.append(["", "", rate(figures["plain one 1"]), "claim 1 + delete", ratio(own, figures["plain one 1"])])
    for n in sorted(int(key.rsplit(" ", 1)[1]) for key in figures if key.startswith("jobs writing ")):
        own, limit = figures[f"jobs writing {n}"], figures[f"plain writing {n}"]
        rows.append(
            [
                f"writing jobs, {n} thread" + ("s" if n > 1 else ""),
                rate(own),
                rate(limit),
                f"claim 100, then INSERT + delete per transaction, {n} connection" + ("s" if n > 1 else ""),
                ratio(own, limit),
            ]
        )
        if (threaded := figures.get(f"plain threads writing {n}")) is not None:
            rows.append(["", "", rate(threaded), f"the same, {n} threads of one process", ratio(own, threaded)])
    if "enqueue" in figures:
        own = figures["enqueue"]
        rows.append(
            [
                "enqueue one per transaction",
                rate(own),
                rate(figures["plain insert"]),
                "INSERT",
                ratio(own, figures["plain insert"]),
            ]
        )
        rows.append(["", "", rate(figures["plain notify"]), "INSERT + pg_notify", ratio(own, figures["plain notify"])])
    if "plain copy" in figures:
        own = figures["bulk"]
        rows.append(
            [
                "bulk enqueue",
                "n/a" if own is None else rate(own),
                rate(figures["plain copy"]),
                "COPY",
                "n/a" if own is None else ratio(own, figures["plain copy"]),
            ]
        )
    rows += asynchronous.rows(figures, rate, ratio)
    rows += limited.rows(figures, ms, ratio)
    if "latency" in figures:
        for name, measure in (("median", timing.median), ("p95", timing.p95)):
            own, limit = measure(figures["latency"]), measure(figures["plain latency"])
            rows.append(
                [
                    f"enqueue→start latency, {name}",
                    ms(own),
                    ms(limit),
                    "LISTEN, then claim",
                    f"{ratio(own, limit)} ({(own - limit) * 1000:+.2f} ms)",
                ]
            )
    return rows


def checks(figures: dict, sizes) -> list[list[str]]:
    """The rows of the checks: the claim beside many waiting rows, and a worker's memory."""
    rows = [["check", "before", "after", "after / before"]]
    if "scale" in figures:
        empty, full, plan = figures["scale"]
        beside = f"beside {sizes.waiting:,} waiting"
        rows.append(
            [
                "claim of a due job",
                f"{ms(empty.due)} empty table",
                f"{ms(full.due)} {beside}",
                f"{ratio(full.due, empty.due)} (plan: {plan})",
            ]
        )
        rows.append(
            [
                "claim finding nothing due",
                f"{ms(empty.nothing)} empty table",
                f"{ms(full.nothing)} {beside}",
                ratio(full.nothing, empty.nothing),
            ]
        )
    if "memory" in figures:
        start, end, speed = figures["memory"]
        rows.append(
            [
                f"worker RSS, draining {sizes.memory:,} jobs",
                f"{start:.1f} MiB at start",
                f"{end:.1f} MiB at end",
                f"{ratio(end, start)} (drained at {rate(speed)})",
            ]
        )
    return rows


def shelf_rows(shelf: dict, sizes) -> list[list[str]]:
    """The rows of the shelf check: each read's median, and the whole-shelf operations end to end."""
    rows = [[f"beside {sizes.waiting:,} failed and {sizes.waiting:,} scheduled jobs", "time"]]
    for name, value in shelf.items():
        if name == "status, estimated":
            said = "; ".join(
                ", ".join(f"{state} ~{count:,}" for state, count in states.items()) or "none" for states in value
            )
            rows.append(["  counts said to be estimates", said])
        elif name.endswith("(every=True)"):
            rows.append([f"{name}, the whole shelf", f"{value:.1f} s ({rate(sizes.waiting / value)})"])
        else:
            rows.append([f"{name}, median", ms(value)])
    return rows


def pressure_rows(run: dict, sizes) -> list[list[str]]:
    """The rows of the pressure column: the rate kept, what each job cost, and what the backends waited on."""
    waits = ", ".join(
        f"{name} {count / run['backend samples']:.1%}" for name, count in run["waits"].most_common(MOST_WAITS)
    )
    blocked = "; ".join(
        f"{squeezed(waiter)} behind {squeezed(blocker)} x{count}"
        for (waiter, blocker), count in run["lock waits"].most_common(MOST_WAITS // 2)
    )
    warned = ", ".join(f"{kind} x{count}" for kind, count in run["warnings"].most_common()) or "none"
    return [
        [
            f"pressure: {sizes.pressure_processes} worker process(es) of {pressure.THREADS} threads, "
            f"{pressure.JOB_MS} ms jobs, {sizes.pressure_seconds:g} s",
            "measured",
        ],
        ["jobs done a second / offered", f"{run['done']:.1f} / {run['offered']:.1f} ({run['jobs']:,} jobs)"],
        [
            "transactions per job (the whole database, producer's included)",
            f"{run['transactions'] / run['jobs']:.2f}"
            f" ({run['transactions'] / run['jobs'] * run['offered']:.0f}/s at the offered rate)",
        ],
        ["workers' CPU, seconds a second (user + system)", f"{run['cpu']:.2f}"],
        [
            f"backend samples waiting on a lock (every {pressure.SAMPLE_EVERY:g} s)",
            f"{run['lock share']:.2%} of {run['backend samples']:,}; in {run['snapshots waiting']:.1%} of samplings",
        ],
        ["  waits seen, share of backend samples", waits or "none"],
        ["  lock waits, statement behind statement", blocked or "none"],
        ["workers' warnings", warned],
    ]


def squeezed(statement: str | None) -> str:
    """The start of a statement as sampled, on one line (the blocker may have gone by the time it is read)."""
    return f"`{' '.join(statement.split())}`" if statement else "(gone)"


def goals(figures: dict) -> list[list[str]]:
    """A line per goal of the issue that the run measured: the goal, the measured figure, PASS or MISS."""
    rows = [["goal (issue 7)", "measured", ""]]
    if "plain batch 1" in figures and "plain batch 4" in figures:
        best, _ = best_drain(figures)
        share = best / figures["plain batch 1"]
        rows.append(
            [
                f"drain, best setting >= {DRAIN_SHARE:g} x plain claim 100 at concurrency 1",
                f"{share:.2f}",
                verdict(share >= DRAIN_SHARE),
            ]
        )
    if "plain batch 1" in figures:
        share = figures["jobs drain 1"] / figures["plain batch 1"]
        rows.append(
            [
                f"  stricter reading: drain at concurrency 1 >= {DRAIN_SHARE:g} x the same",
                f"{share:.2f}",
                verdict(share >= DRAIN_SHARE),
            ]
        )
    if "plain batch 4" in figures:
        best, _ = best_drain(figures)
        rows.append(
            [
                f"drain, best setting >= {PEER_MULTIPLE} x pgqueuer's {rate(PEER_BEST)} (issue's figure)",
                f"{best / PEER_BEST:.2f} x",
                verdict(best >= PEER_MULTIPLE * PEER_BEST),
            ]
        )
    if "latency" in figures:
        median, p95 = timing.median(figures["latency"]), timing.p95(figures["latency"])
        gap = median - timing.median(figures["plain latency"])
        rows.append([f"latency median <= {ms(LATENCY_MEDIAN)}", ms(median), verdict(median <= LATENCY_MEDIAN)])
        rows.append([f"latency p95 <= {ms(LATENCY_P95)}", ms(p95), verdict(p95 <= LATENCY_P95)])
        rows.append(
            [
                f"latency median <= plain LISTEN-then-claim + {ms(LATENCY_GAP)}",
                f"{gap * 1000:+.2f} ms",
                verdict(gap <= LATENCY_GAP),
            ]
        )
    for n in sorted(int(key.rsplit(" ", 1)[1]) for key in figures if key.startswith("jobs writing ")):
        share = figures[f"jobs writing {n}"] / figures[f"plain writing {n}"]
        rows.append(
            [
                f"writing jobs at {n} thread(s) >= {WRITING_SHARE:g} x plain SQL, a transaction per job",
                f"{share:.2f}",
                verdict(share >= WRITING_SHARE),
            ]
        )
    if "enqueue" in figures:
        share = figures["enqueue"] / figures["plain insert"]
        rows.append(
            [
                f"enqueue one per transaction >= {ENQUEUE_SHARE:g} x plain INSERT",
                f"{share:.2f}",
                verdict(share >= ENQUEUE_SHARE),
            ]
        )
    if "plain copy" in figures:
        own = figures["bulk"]
        share = None if own is None else own / figures["plain copy"]
        rows.append(
            [
                f"bulk enqueue >= {BULK_SHARE:g} x plain COPY",
                "n/a" if share is None else f"{share:.2f}",
                "MISS (no jobs.later_many)" if share is None else verdict(share >= BULK_SHARE),
            ]
        )
    rows += asynchronous.goals(figures, verdict)
    rows += limited.goals(figures, verdict)
    if "scale" in figures:
        empty, full, _ = figures["scale"]
        factor = full.due / empty.due
        rows.append(
            [
                f"claim beside the waiting rows <= {SCALE_FACTOR:g} x empty table",
                f"{factor:.2f}",
                verdict(factor <= SCALE_FACTOR),
            ]
        )
    if "memory" in figures:
        start, end, _ = figures["memory"]
        rows.append(
            [
                f"worker RSS flat: end <= {MEMORY_GROWTH:g} x start",
                f"{end / start:.2f}",
                verdict(end <= MEMORY_GROWTH * start),
            ]
        )
    if "shelf" in figures:
        rows += shelf_goals(figures["shelf"])
    if "pressure" in figures:
        rows += pressure_goals(figures["pressure"])
    return rows


def pressure_goals(run: dict) -> list[list[str]]:
    """The offered rate kept (KEPT_UP), and lock waits in fewer than LOCK_SHARE of the backend samples."""
    kept = run["done"] / run["offered"]
    return [
        [f"under pressure, jobs done a second >= {KEPT_UP:g} x offered", f"{kept:.3f}", verdict(kept >= KEPT_UP)],
        [
            f"under pressure, backend samples waiting on a lock < {LOCK_SHARE:.0%}",
            f"{run['lock share']:.2%}",
            verdict(run["lock share"] < LOCK_SHARE),
        ],
    ]


def shelf_goals(shelf: dict) -> list[list[str]]:
    """status within STATUS_TIME, every page within PAGE_TIME, beside the shelf check's rows."""
    rows = [
        [
            f"status beside the shelf check's rows <= {ms(STATUS_TIME)}",
            ms(shelf["status"]),
            verdict(shelf["status"] <= STATUS_TIME),
        ]
    ]
    pages = {
        name: value
        for name, value in shelf.items()
        if name != "status" and isinstance(value, float) and not name.endswith("(every=True)")
    }
    slowest = max(pages, key=pages.__getitem__)
    rows.append(
        [
            f"every page beside them <= {ms(PAGE_TIME)} (slowest: {slowest})",
            ms(pages[slowest]),
            verdict(pages[slowest] <= PAGE_TIME),
        ]
    )
    return rows


def best_drain(figures: dict) -> tuple[float, int]:
    """jobs' best drain rate of the run, and the number of worker processes that reached it."""
    return max((value, int(key.rsplit(" ", 1)[1])) for key, value in figures.items() if key.startswith("jobs drain "))


def aligned(rows: list[list[str]]) -> str:
    """Rows of cells as text in columns, the first row underlined as the heading."""
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join([lines[0], "-" * max(len(line) for line in lines), *lines[1:]])


def rate(per_second: float) -> str:
    """A rate in thousands of jobs a second, to about three figures."""
    thousands = per_second / 1000
    return f"{thousands:.3g} k/s" if thousands < 100 else f"{thousands:.0f} k/s"


def ms(seconds: float) -> str:
    """Seconds shown in milliseconds."""
    return f"{seconds * 1000:.2f} ms"


def ratio(own: float, limit: float) -> str:
    """jobs' figure over the limit's, to two decimals."""
    return f"{own / limit:.2f}"


def verdict(met: bool) -> str:
    """PASS when the goal is met, else MISS."""
    return "PASS" if met else "MISS"
