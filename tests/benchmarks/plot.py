"""The run's drain and latency figures as a picture: jobs beside plain SQL, written as a PNG by --plot.

Two panels, each drawn when its columns ran: the drain rates (one worker thread, and the
best setting) against the plain claim-and-delete loops, and the enqueue→start latency
(median and 95th percentile) against a plain LISTEN-then-claim loop. It needs
matplotlib (a test extra), imported only when a plot is asked for.
"""

from . import timing

SIZE = (10, 4.2)  # inches of the whole picture
DPI = 110  # dots per inch of the PNG
JOBS, PLAIN, PLAIN_ONE = "#4c72b0", "#999999", "#cccccc"  # the bars of jobs, of plain claim 100, of plain claim 1


def plotted(figures: dict, machine: str, path) -> bool:
    """Writes the picture of `figures` to `path`; False, writing nothing, when no drain or latency column ran."""
    panels = [draw for draw, key in ((drains, "plain batch 1"), (latencies, "latency")) if key in figures]
    if not panels:
        return False
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    from matplotlib import pyplot

    picture, axes = pyplot.subplots(1, len(panels), figsize=SIZE, squeeze=False)
    for draw, ax in zip(panels, axes[0], strict=True):  # one axes per panel (squeeze=False: a row of them)
        draw(ax, figures)
    picture.suptitle(f"jobs beside plain SQL: {machine}", fontsize=9)
    picture.tight_layout()
    picture.savefig(path, dpi=DPI)
    pyplot.close(picture)
    return True


def drains(ax, figures: dict) -> None:
    """Jobs drained a second by jobs and by the plain loops, at one worker thread and at the best setting."""
    settings = [("one worker thread", figures["jobs drain 1"], figures["plain batch 1"], figures["plain one 1"])]
    if "plain batch 4" in figures:
        best = max(figures[f"jobs drain {n}"] for n in (1, 2, 4) if f"jobs drain {n}" in figures)
        settings.append(("best setting", best, figures["plain batch 4"], figures["plain one 4"]))
    width = 0.27
    for at, (_, own, batch, one) in enumerate(settings):
        ax.bar(at - width, own / 1000, width, color=JOBS, label="jobs" if at == 0 else None)
        ax.bar(at, batch / 1000, width, color=PLAIN, label="plain: claim 100 + delete" if at == 0 else None)
        ax.bar(at + width, one / 1000, width, color=PLAIN_ONE, label="plain: claim 1 + delete" if at == 0 else None)
    ax.set_xticks(range(len(settings)), [name for name, *_ in settings])
    ax.set_ylabel("thousand jobs a second")
    ax.set_title("drain", fontsize=10)
    ax.legend(fontsize=8)


def latencies(ax, figures: dict) -> None:
    """The enqueue→start latency of an idle worker, median and p95, beside the plain loop's, in milliseconds."""
    width = 0.35
    for at, measure in enumerate((timing.median, timing.p95)):  # named by the ticks below
        ax.bar(at - width / 2, measure(figures["latency"]) * 1000, width, color=JOBS, label="jobs" if at == 0 else None)
        ax.bar(
            at + width / 2,
            measure(figures["plain latency"]) * 1000,
            width,
            color=PLAIN,
            label="plain: LISTEN, then claim" if at == 0 else None,
        )
    ax.set_xticks([0, 1], ["median", "95th percentile"])
    ax.set_ylabel("milliseconds from commit to start")
    ax.set_title("enqueue→start latency, idle worker", fontsize=10)
    ax.legend(fontsize=8)
