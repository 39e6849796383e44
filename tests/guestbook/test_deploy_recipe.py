"""docs/operations.md's "A deploy on one machine", followed as written, on this machine's parts.

The section's blocks are read by their first lines. What the test changes it says: the
paths under /srv/guestbook and /etc move into the test's own folder, and the environment
file's DATABASE_URL, SECRET_KEY, MAIL_URL and PORT name the test's database, a secret, a
real SMTP server (aiosmtpd) and a free port. Tests have no systemd, so each unit's
ExecStart line runs as a process with its EnvironmentFile's settings, stopped with SIGTERM
as systemd stops it, and the start block's systemctl lines are left out; its curl line runs.
nginx runs the site file in front of the web unit, on a certificate made here, listening on
a free port; the file is also checked with `nginx -t`, and its limits against the app's own.
"""

import configparser
import re
import shlex
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from e2e.served import no_stray_guestbook
from e2e.tether import dying_with_this_thread
from guestbook import connections, forms, proxies
from tests.test_docs import SKIPPED, section

from ..mail.smtpd import SMTPServer, free_port
from .served import ROOT, WAIT, Visitor, eventually

OPERATIONS = ROOT / "docs" / "operations.md"
SECTION = "A deploy on one machine"
SRV, ETC = "/srv/guestbook", "/etc/"  # the places the section installs to, moved into the test's folder
INSTALL = "# install, as root, in a copy of this repository at /srv/guestbook/src"
ENV_FILE = "# /etc/guestbook/env"
UNITS = {
    "web": "# /etc/systemd/system/guestbook-web.service",
    "worker": "# /etc/systemd/system/guestbook-worker.service",
}
NGINX = "# /etc/nginx/sites-available/guestbook"
START = "# start, as root, once the files above are in place"
BLOCK = re.compile(r"^```\w*\n(.*?)^```", re.S | re.M)
INSTALL_WAIT = 300.0  # seconds the install block may take: a virtual environment and pip install
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # the PATH systemd gives a service


def blocks() -> dict[str, str]:
    """The section's code blocks, by their first line."""
    return {block.partition("\n")[0]: block for block in BLOCK.findall(section(OPERATIONS.read_text(), SECTION))}


def settings_of(text: str) -> dict[str, str]:
    """An environment file's settings, read as systemd reads them: KEY=VALUE lines, quotes taken off."""
    pairs = (line.partition("=") for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return {name.strip(): value.strip().removeprefix('"').removesuffix('"') for name, _, value in pairs}


def service_of(unit: str) -> dict[str, str]:
    """The [Service] section of a systemd unit."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]  # systemd's keys are case-sensitive
    parser.read_string(unit.partition("\n")[2])
    return dict(parser["Service"])


def moved(text: str, root) -> str:
    """`text` with /srv/guestbook and /etc/ moved under `root`."""
    return text.replace(SRV, str(root / "srv")).replace(ETC, f"{root}/etc/")


def installed(root) -> None:
    """Runs the install block in a copy of the tree at the moved /srv/guestbook/src."""
    shutil.copytree(ROOT, root / "srv" / "src", ignore=shutil.ignore_patterns(*SKIPPED, "*.egg-info", "build", ".*"))
    done = subprocess.run(
        ["bash", "-e", "-c", moved(blocks()[INSTALL], root)], capture_output=True, text=True, timeout=INSTALL_WAIT
    )
    assert done.returncode == 0, done.stdout + done.stderr


def written_environment(root, values: dict[str, str]) -> None:
    """Writes the environment file's block where the units read it, with `values` in place of its own."""
    lines = [
        f"{name}={values[name]}" if (name := line.partition("=")[0]) in values else line
        for line in blocks()[ENV_FILE].splitlines()
    ]
    file = root / "etc" / "guestbook" / "env"
    file.parent.mkdir(parents=True)
    file.write_text("\n".join(lines) + "\n")
    file.chmod(0o600)


def started(unit: str, root) -> subprocess.Popen:
    """The unit's ExecStart line as a process, with its EnvironmentFile's settings and systemd's PATH."""
    service = service_of(blocks()[UNITS[unit]])
    settings = settings_of((root / moved(service["EnvironmentFile"], root).removeprefix(f"{root}/")).read_text())
    return subprocess.Popen(
        shlex.split(moved(service["ExecStart"], root)),
        env={"PATH": PATH, **settings},
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=dying_with_this_thread(),
    )


def stopped(process: subprocess.Popen) -> tuple[int, str]:
    """SIGTERM, as systemd stops a unit; the exit status and what the process logged."""
    process.send_signal(signal.SIGTERM)
    _, logged = process.communicate(timeout=WAIT)
    return process.returncode, logged


def answered(visitor: Visitor, path: str) -> int | None:
    """The status of `visitor`'s GET of `path`; None while nothing listens yet."""
    try:
        return visitor.request(path)[0]
    except OSError:  # urllib's URLError included: the connection was refused
        return None


def health(port: int) -> subprocess.CompletedProcess:
    """The start block's curl line, on the port the test's environment file names."""
    (curl,) = [line for line in blocks()[START].splitlines() if line.startswith("curl ")]
    command = shlex.split(curl.replace("127.0.0.1:5000", f"127.0.0.1:{port}"))
    return subprocess.run(command, capture_output=True, text=True, timeout=WAIT)


@pytest.mark.slow
def test_the_deploy_serves_through_nginx_answers_its_health_check_and_its_worker_unit_sends_the_letter(
    database_url, db, tmp_path, monkeypatch
):
    installed(tmp_path)
    port, front = free_port(), free_port()
    (tmp_path / "nginx").mkdir()
    conf = nginx_config(tmp_path / "nginx", (front, port))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "nginx" / "fullchain.pem"))  # the visitor trusts nginx
    with SMTPServer() as smtp:
        values = {"DATABASE_URL": database_url, "SECRET_KEY": "s" * 64, "MAIL_URL": smtp.url, "PORT": str(port)}
        written_environment(tmp_path, values)
        no_stray_guestbook(database_url)
        web = started("web", tmp_path)
        worker = proxy = None
        try:
            assert eventually(lambda: health(port).stdout == "missing: no live worker serves the mail queue\n")
            worker = started("worker", tmp_path)
            assert eventually(lambda: health(port).returncode == 0)
            proxy = subprocess.Popen(
                ["nginx", "-p", str(tmp_path / "nginx"), "-c", str(conf), "-g", "daemon off;"],
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=dying_with_this_thread(),
            )
            visitor = Visitor(f"https://127.0.0.1:{front}")
            assert eventually(lambda: answered(visitor, "/health") == 200)
            address = f"deploy-{uuid.uuid4().hex[:8]}@example.com"
            assert visitor.request("/signup", {"email": address, "password": "correct horse battery"})[0] == 302
            with smtp.inbox.arrived:
                assert smtp.inbox.arrived.wait_for(lambda: smtp.letters, WAIT)
        finally:
            proxy_stopped = stopped(proxy) if proxy else (None, "")
            web_stopped = stopped(web)
            worker_stopped = stopped(worker) if worker else (None, "")
    assert proxy_stopped[0] == 0, proxy_stopped[1]
    assert web_stopped[0] == 0, web_stopped[1]
    # One letter sent, and a clean stop: the count of jobs done also holds upkeep's daily tick when the test
    # runs in its minute (prune-batches, at 03:47 UTC), so the letter's own line is what is counted.
    worker_log = worker_stopped[1]
    assert worker_stopped[0] == 0 and worker_log.count("(write on mail) ran write") == 1, worker_log
    assert re.search(r"the worker stopped: \d+ job\(s\) done, 0 failed for good", worker_log), worker_log
    site = settings_of(blocks()[ENV_FILE])["BASE_URL"]
    assert (smtp.letters[0]["To"], smtp.letters[0]["From"]) == (address, "Guestbook <guestbook@example.com>")
    assert f"{site}/confirm/" in smtp.letters[0].get_body(("plain",)).get_content()
    assert not (tmp_path / "outbox").exists()  # production never writes a letter to disk


def test_the_procfile_runs_what_the_units_run():
    procfile = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines())
    units = {
        name: service_of(blocks()[unit])["ExecStart"].removeprefix(f"{SRV}/venv/bin/") for name, unit in UNITS.items()
    }

    assert procfile == {"web": units["web"] + " --port $PORT", "worker": units["worker"]}


def directives(block: str) -> dict[str, list[str]]:
    """Each nginx directive of `block`, by name, with the values of its every use."""
    found: dict[str, list[str]] = {}
    for line in block.splitlines():
        if line.strip().endswith(";") and not line.strip().startswith("#"):
            name, _, value = line.strip().removesuffix(";").partition(" ")
            found.setdefault(name, []).append(value.strip())
    return found


def test_the_nginx_file_keeps_the_limits_the_documents_list_and_forwards_to_the_app():
    nginx = directives(blocks()[NGINX])
    env = settings_of(blocks()[ENV_FILE])

    assert nginx["client_max_body_size"] == [f"{forms.CONTENT_MAX // 1024}k"]
    assert nginx["client_header_timeout"] == nginx["client_body_timeout"] == [f"{connections.REQUEST_DEADLINE}s"]
    assert nginx["limit_conn"] == [f"guestbook_connections {connections.CLIENT_CONNECTIONS}"]
    assert nginx["proxy_request_buffering"] == ["on"]
    assert "X-Forwarded-For $remote_addr" in nginx["proxy_set_header"]
    assert set(nginx["proxy_pass"]) == {f"http://{env['HOST']}:{env['PORT']}"}
    # nginx connects to the app from the address it sends to: the one proxy TRUSTED_PROXIES names.
    assert proxies.trusted(env["HOST"], proxies.parsed(env["TRUSTED_PROXIES"]))


def test_nginx_takes_the_file_as_written(tmp_path):
    done = subprocess.run(
        ["nginx", "-t", "-p", str(tmp_path), "-c", str(nginx_config(tmp_path))],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )

    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr


def nginx_config(folder, ports: tuple[int, int] | None = None) -> Path:
    """An nginx.conf in `folder` that includes the site file with the test's certificate; given `ports`, nginx's
    and the app's, the site listens on the first (its plain HTTP on a free one) and passes to the second."""
    cert, key = folder / "fullchain.pem", folder / "privkey.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=guestbook.example"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    live = "/etc/letsencrypt/live/guestbook.example/"
    text = blocks()[NGINX].replace(f"{live}fullchain.pem", str(cert)).replace(f"{live}privkey.pem", str(key))
    if ports:
        text = text.replace("listen 443 ssl;", f"listen 127.0.0.1:{ports[0]} ssl;")
        text = text.replace("listen 80;", f"listen 127.0.0.1:{free_port()};")
        text = text.replace("http://127.0.0.1:5000", f"http://127.0.0.1:{ports[1]}")
    (folder / "guestbook").write_text(text)
    (folder / "logs").mkdir(exist_ok=True)
    conf = folder / "nginx.conf"
    conf.write_text(
        f"error_log stderr;\npid {folder}/nginx.pid;\nevents {{}}\n"
        f"http {{\n    access_log off;\n    include {folder}/guestbook;\n}}\n"
    )
    return conf
