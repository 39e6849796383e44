"""The benchmark draws its drain and latency figures beside plain SQL when --plot names a PNG.

A real run, as small as the benchmark allows: the latency column alone, on the tests'
database (in the benchmark's own schema, dropped after). What is checked is the picture,
never a speed: speeds are for the benchmark to report, not for a test to time.
"""

import struct

from . import __main__ as benchmark
from .plot import DPI, SIZE

PNG = b"\x89PNG\r\n\x1a\n"  # the first bytes of every PNG, before its IHDR chunk
SMALLEST = ["--jobs", "100", "--rounds", "1"]  # the least the benchmark measures


def test_the_benchmark_draws_its_latency_beside_plain_sql_in_a_png(database_url, tmp_path, capsys):
    picture = tmp_path / "performance.png"

    assert benchmark.main(["--only", "latency", *SMALLEST, "--plot", str(picture), "--database-url", database_url]) == 0

    header = picture.read_bytes()[:24]
    assert header.startswith(PNG) and header[12:16] == b"IHDR"
    assert struct.unpack(">II", header[16:24]) == (SIZE[0] * DPI, round(SIZE[1] * DPI))
    assert "enqueue→start latency, median" in capsys.readouterr().out  # the report the picture goes with


def test_a_run_without_drain_or_latency_figures_says_it_draws_nothing(database_url, tmp_path, capsys):
    picture = tmp_path / "performance.png"

    assert benchmark.main(["--only", "enqueue", *SMALLEST, "--plot", str(picture), "--database-url", database_url]) == 0

    assert not picture.exists()
    assert "no plot" in capsys.readouterr().err
