"""The embedded PostgreSQL: asked for without its extra, it says which to install."""

import sys

import pytest

from guestbook import embedded
from guestbook.__main__ import main


@pytest.fixture
def without_pgserver(monkeypatch):
    """An install without the extra `embedded`: importing pgserver fails, as it would."""
    monkeypatch.setitem(sys.modules, "pgserver", None)


def test_the_embedded_server_without_its_extra_names_the_extra_to_install(without_pgserver, tmp_path):
    with pytest.raises(embedded.NotInstalled, match=r"install the extra 'embedded' \(pip install -e '\.\[embedded\]'"):
        embedded.server(tmp_path / "pgdata")


def test_serving_without_a_database_or_the_extra_says_which_to_install(without_pgserver, monkeypatch, capsys):
    monkeypatch.delenv("DATABASE_URL", raising=False)

    assert main(["serve", "--development"]) == 2
    assert "install the extra 'embedded'" in capsys.readouterr().err
