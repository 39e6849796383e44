"""The statements: each module sends SQL on a connection its caller gives and returns, never starting a
thread. The tables (schema.py, schema.sql), enqueueing (enqueue.py, `later`; core/arguments.py checks
the arguments), the claim and the settling statements (claims.py), flows, control, the shelf, limits,
schedules, the pulse's counts, the workers' table and a claim's frontier. Their statements are named in
queries.sql, loaded here once as `queries` (schema, schedules and the pulse load files of their own). It
imports core/ and itself only: never runtime/, cli/ or web/, so an app that only enqueues needs core/ and
store/.
"""

from pathlib import Path

from ..core.sql import load

queries = load(Path(__file__).with_name("queries.sql"))  # the statements of store/, by name
