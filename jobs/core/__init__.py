"""The ground of the queue: a claimed Job and the defaults it is claimed with (job.py), the loader of the
named SQL statements (sql.py), retry policies (policies.py), cron expressions (cron.py), and a job's
arguments: the checks they pass before they are written, and the redaction of the secret ones
(arguments.py). It sends no statement and starts no thread, and imports nothing of jobs but core/
(psycopg and the standard library only), so every other layer may import it.
"""
