"""Processes a test starts die with the test run, however the run ends.

A run killed from outside (SIGTERM or SIGKILL to pytest) never reaches its fixtures'
teardown. A guestbook it served would go on working the database's mail queue and take
the letters of the next run, so every process a test starts is tied to the run:
  dying_with_this_thread()  for Popen's preexec_fn: Linux sends the child SIGKILL when
                            the thread that started it ends (PR_SET_PDEATHSIG).
  python -m e2e.tether [--grace S] COMMAND...  for a command that starts children of
                            its own, as `make run` starts the server: the tether gets
                            SIGTERM when its parent dies, passes it to COMMAND, and after
                            GRACE seconds SIGKILLs every process left in its group.
  stops_on_sigterm()        makes SIGTERM stop pytest as Ctrl-C does, teardown included.
PR_SET_PDEATHSIG is Linux's; elsewhere nothing is tied, and teardown alone stops them.
"""

import argparse
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>: the signal a process gets when its parent's thread ends
PR_SET_CHILD_SUBREAPER = 36  # adopt orphaned descendants, so that waiting for children waits for them all
GRACE = 15  # seconds COMMAND may take to exit after SIGTERM before its whole group is SIGKILLed
LINUX = sys.platform == "linux"


def prctl(option: int, value: int) -> None:
    """Calls Linux's prctl(2); raises OSError if it refuses."""
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value}) failed")


def dying_with_this_thread():
    """A preexec_fn for Popen: the child is SIGKILLed when the thread starting it ends; None off Linux.

    Linux ties the child to the thread that forks it, not to the process: start a
    tied process from the test's own thread, never from a pool thread that ends first.
    """
    if not LINUX:
        return None
    parent = os.getpid()
    call = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child

    def tie() -> None:
        call(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the tie was made
            os.kill(os.getpid(), signal.SIGKILL)

    return tie


def stops_on_sigterm() -> None:
    """Makes SIGTERM raise KeyboardInterrupt, which pytest meets by running every teardown before it exits.

    SIGTERM is how CI and `make` stop a run; unhandled, it ends pytest at once, and the
    throw-away PostgreSQL of the run would be left behind with its folder.
    """
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def living(*, group: int | None = None, session: int | None = None) -> list[int]:
    """The pids of the processes of process group `group` (or of `session`) that have not exited; Linux only."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # not a process, or one that exited while we looked
        state, pgrp, sid = fields[0], int(fields[2]), int(fields[3])
        if state != "Z" and (pgrp == group or sid == session):
            found.append(int(entry.name))
    return found


def tethered(command: list[str], grace: float = GRACE) -> list[str]:
    """`command` run under the tether, on this Python: start it with start_new_session=True."""
    return [sys.executable, "-m", "e2e.tether", "--grace", str(grace), "--", *command]


class Tether:
    """Runs COMMAND in the tether's process group and ends that group when told to, or when orphaned."""

    def __init__(self, command: list[str], grace: float):
        self.command, self.grace = command, grace
        self.child: subprocess.Popen[bytes] | None = None  # COMMAND, once started
        self.stopping = False

    def run(self) -> int:
        """Runs COMMAND; returns its exit status once no process of the group is left."""
        if os.getpgrp() != os.getpid():
            os.setpgid(0, 0)  # a group of our own, so that ending it ends nothing else
        parent = os.getppid()
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGHUP, self.stop)
        signal.signal(signal.SIGALRM, self.kill)
        if LINUX:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # orphaned before the tie was made
            return 1
        self.child = subprocess.Popen(self.command)
        status = self.reaped(self.child)
        return status if status >= 0 else 128 - status

    def reaped(self, child: subprocess.Popen[bytes]) -> int:
        """Reaps every child, adopted ones too, until none is left; answers the exit status of `child`, COMMAND."""
        status = 1
        while True:
            try:
                pid, code = os.waitpid(-1, 0)
            except ChildProcessError:
                signal.setitimer(signal.ITIMER_REAL, 0)
                return status
            if pid == child.pid:
                status = child.returncode = os.waitstatus_to_exitcode(code)
                self.stop()  # whatever COMMAND left running goes with it

    def stop(self, *_) -> None:
        """Tells COMMAND to stop with SIGTERM, and arms the SIGKILL of the whole group after `grace`."""
        if self.stopping:
            return
        self.stopping = True
        if self.child is not None and self.child.returncode is None:
            try:
                os.kill(self.child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        signal.setitimer(signal.ITIMER_REAL, self.grace)

    def kill(self, *_) -> None:
        """SIGKILLs every process of the group, the tether included."""
        os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.tether", description=__doc__.split("\n")[0])
    parser.add_argument("--grace", type=float, default=GRACE, help=f"seconds before SIGKILL (default {GRACE})")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    return Tether(args.command, args.grace).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
