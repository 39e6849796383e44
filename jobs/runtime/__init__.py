"""The worker's machinery: the Worker and its starters (worker.py); its work threads, given one frozen
Settings and the Parts they share, never the Worker (work_thread.py); running each job (running.py,
coroutines.py for async performers), settling it (settling.py) on its own transaction (transaction.py);
the claimed rows and who holds them (holdings.py); the supervisor that starts the threads and lets go of
what no thread will (supervisor.py); the maintenance on the listener's connection (maintenance.py); the
connections and what the server's refusals mean (connections.py, refusals.py); the watchdog and the
heartbeat (watchdog.py). It imports core/ and store/, never cli/ or web/.
"""

import importlib
from types import ModuleType

OPTIONAL = ("limits", "schedules", "pulse")  # store/'s modules a copy of the package may leave out


def optional(module: str) -> ModuleType | None:
    """store/'s `module` (one of OPTIONAL), or None when a copy of the package left it out."""
    name = f"{__name__.rsplit('.', 1)[0]}.store.{module}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name != name:  # a module it imports is missing: not a part left out
            raise
        return None
