"""How the benchmark times things: processes let go at once, latencies, percentiles, memory.

Concurrency greater than one is always processes, never threads, so that Python's
global lock does not decide a figure; every process gets ready (connects) before the
clock starts, and the clock stops when the last one has answered.
"""

import multiprocessing
import os
import resource
import statistics
import sys
import threading
import time
import traceback
from queue import Empty  # the standard library's, which a multiprocessing queue raises too

READY_TIMEOUT = 60.0  # seconds processes may take to start and connect
RUN_TIMEOUT = 1800.0  # seconds a timed run may take before the benchmark gives up
WARMUP = 10  # latency samples taken first and thrown away (connections, prepared statements)
IDLE_GAP = 0.02  # seconds between latency samples, so the worker is idle when the next job comes
LATENCY_TIMEOUT = 5.0  # seconds a latency sample may take before the benchmark gives up


def together(target, arguments: list[tuple]) -> tuple[float, list]:
    """Runs target(*args, gate) in a process per args, all let go at once; returns (seconds, answers).

    `target` gets ready, calls gate.wait(), then does the timed work and returns a
    picklable answer. The seconds run from the moment all are ready to the last answer.
    """
    context = multiprocessing.get_context("spawn")
    gate = context.Barrier(len(arguments) + 1)
    answers = context.Queue()
    processes = [context.Process(target=answered, args=(target, args, gate, answers)) for args in arguments]
    for process in processes:
        process.start()
    try:
        try:
            gate.wait(READY_TIMEOUT)
        except threading.BrokenBarrierError:
            raise RuntimeError(
                f"a benchmark process of {target.__name__} failed to get ready:\n{sent(answers)}"
            ) from None
        started = time.perf_counter()
        results = [answers.get(timeout=RUN_TIMEOUT) for _ in processes]
        seconds = time.perf_counter() - started
    finally:
        for process in processes:
            process.join(READY_TIMEOUT)
            if process.is_alive():
                process.kill()  # only after a failure or a timeout: a finished process has returned
    failures = [text for ok, text in results if not ok]
    if failures:
        raise RuntimeError(f"a benchmark process of {target.__name__} failed:\n{failures[0]}")
    return seconds, [answer for _, answer in results]


def answered(target, args, gate, answers) -> None:
    """The body of each process of `together`: runs target and sends back (True, answer) or (False, traceback)."""
    try:
        answers.put((True, target(*args, gate)))
    except BaseException:
        gate.abort()  # a process that fails before the gate must not leave the others waiting
        answers.put((False, traceback.format_exc()))


def sent(answers) -> str:
    """The traceback a failed process sent, or a note that it sent none."""
    try:
        return answers.get(timeout=1.0)[1]
    except Empty:
        return "(no traceback came: the process died while it started)"


class Starts:
    """The moment a performer began, handed from the thread that runs it to the one that measures."""

    def __init__(self):
        self.event = threading.Event()
        self.moment = 0.0

    def begun(self, *_) -> None:
        """Notes the moment; its first line is the "start" of enqueue→start. Usable as a performer."""
        self.moment = time.perf_counter()
        self.event.set()


def latencies(enqueue, starts: Starts, samples: int) -> list[float]:
    """Seconds from each enqueue's commit to the start of its job, one per sample, the worker idle each time.

    `enqueue()` queues one job and commits; its commit is taken as done when it returns.
    """
    measured = []
    for n in range(WARMUP + samples):
        starts.event.clear()
        enqueue()
        committed = time.perf_counter()
        if not starts.event.wait(LATENCY_TIMEOUT):
            raise RuntimeError(f"latency sample {n}: no job started within {LATENCY_TIMEOUT:g} s of its commit")
        if n >= WARMUP:
            measured.append(starts.moment - committed)
        time.sleep(IDLE_GAP)
    return measured


def median(values: list[float]) -> float:
    """The middle of `values`."""
    return statistics.median(values)


def p95(values: list[float]) -> float:
    """The 95th percentile of `values`."""
    return statistics.quantiles(values, n=20)[18]


def resident_mib() -> float:
    """This process's resident memory now, in MiB; its peak where /proc is missing (not Linux)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10
