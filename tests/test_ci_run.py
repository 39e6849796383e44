"""CI's script stopped halfway stops everything it started, and the next run passes.

`.ci/run` is started for real, with PYTEST_ARGS naming one spec that serves a guestbook
and waits; `make check` runs first, as always. Once the guestbook answers, the script
alone gets SIGTERM, as a CI runner stopping a job sends it; every process of the
script's session and of the guestbook's group must be gone within a bound, and
`make test` run again on the same spec passes.
"""

import os
import signal
import subprocess

from e2e.tether import living

from .jobs.helpers import PROJECT, WAIT, wait_for

# The spec both runs run: it serves a guestbook, says where, and waits, unless told to end at once.
SPEC = """
import os
import threading


def test_serving(guestbook):
    report = os.environ["SERVED_REPORT"]
    with open(report + ".part", "w") as told:
        told.write(str(guestbook.process.pid))
    os.rename(report + ".part", report)
    if not os.environ.get("SERVED_AND_DONE"):
        threading.Event().wait()
"""
GONE_WITHIN = 40.0  # seconds for make, pytest and the guestbook to stop (the guestbook is given 15)
CHECKED_WITHIN = 60.0  # seconds `make check` may take before the tests start (mypy without its cache: about 20)


def test_a_stopped_ci_run_leaves_nothing_running_and_the_next_run_passes(tmp_path):
    spec, report = tmp_path / "test_served.py", tmp_path / "served"
    spec.write_text(SPEC)
    args = f"-q -p e2e.conftest -p no:cacheprovider --rootdir {tmp_path} {spec}"
    # Not the make of this run's own `make test`: its MAKEFLAGS would pass on its command line's PYTEST_ARGS.
    env = {name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(PYTEST_ARGS=args, SERVED_REPORT=str(report))
    with (tmp_path / "ci.log").open("wb") as log:
        ci = subprocess.Popen(
            [PROJECT / ".ci" / "run"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    group = None
    try:
        wait_for(
            lambda: report.exists() or ci.poll() is not None,
            "the guestbook to answer",
            timeout=CHECKED_WITHIN + 2 * WAIT,
        )
        said = (tmp_path / "ci.log").read_text()
        assert report.exists(), f"the run ended first:\n{said}"
        assert said.index("== make check") < said.index("== make test"), "the checks come before the tests"
        group = int(report.read_text())

        ci.send_signal(signal.SIGTERM)
        ci.wait(GONE_WITHIN)
        wait_for(
            lambda: not living(session=ci.pid) and not living(group=group),
            "make, pytest and the guestbook to end",
            timeout=GONE_WITHIN,
        )
        assert ci.returncode == 128 + signal.SIGTERM  # it waited for them, then said it was stopped
    finally:
        for leader in (ci.pid, group):
            if leader and living(group=leader):
                os.killpg(leader, signal.SIGKILL)  # what the failed test left running

    report.unlink()
    again = subprocess.run(
        ["make", "test"],
        cwd=PROJECT,
        env={**env, "SERVED_AND_DONE": "1"},
        capture_output=True,
        text=True,
        timeout=2 * WAIT,
    )
    assert again.returncode == 0 and report.exists(), again.stdout + again.stderr
