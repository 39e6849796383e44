"""The worker's machinery: the Worker and its starters (worker.py), its work threads that claim and
run jobs (work_thread.py, running.py; coroutines.py for async performers), the settling of each job
(settling.py, transaction.py), the claimed rows and who holds them (holdings.py), the supervisor that
lets go of what no thread will (supervisor.py), the listener's maintenance and the heartbeat
(maintenance.py), the connections and what the server's refusals mean (connections.py, refusals.py)
and the watchdog. It imports core/ and store/, never cli/ or web/.
"""
