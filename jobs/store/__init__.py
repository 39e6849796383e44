"""The statements: each module sends SQL on a connection its caller gives and returns, never starting a
thread. The tables (schema.py, schema.sql), enqueueing (enqueue.py, `later`; arguments.py checks the
arguments), the claim and the settling statements (claims.py, queries.sql), flows, control, the shelf,
limits, schedules, the pulse's counts, the workers' table and a claim's frontier. It imports core/ and
itself only: never runtime/, cli/ or web/, so an app that only enqueues needs core/ and store/.
"""
