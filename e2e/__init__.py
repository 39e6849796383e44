"""Browser specs: a real Chromium against the guestbook served as `make run` serves it.

Each spec starts its own guestbook on emptied tables, with its mail worker beside it
sending to an SMTP server in the spec's own process, and waits on the letters that
arrive there as a person waits on their inbox. Read the harness in this order:
  local.py   a free port for each server, and waiting on a condition, never a fixed time.
  inbox.py   the SMTP server that keeps every letter, and `wait_for` one of them.
  tether.py  every process a spec starts dies with the test run, even a killed one.
  leftovers.py  the PostgreSQL a killed run left behind, swept when the next one starts.
  served.py  the guestbook as a subprocess of `make run`, on a fresh database.
  guest.py   the steps a person takes in the browser: sign up, confirm, sign in.
  conftest.py  the fixtures that put them together, and the browser to launch.
"""
