"""A throwaway PostgreSQL cluster, for the tests and the benchmark.

:func:`temporary_postgres` runs ``initdb`` and ``pg_ctl`` from the server's
binaries (``$TRIO_RECONCILE_PG_BIN``, else the folder of ``initdb`` on the
``PATH``, else the newest ``/usr/lib/postgresql/*/bin``) on a temporary data
folder, listening only on a Unix socket in that folder, and removes it all
afterwards. The server refuses to run as root: as root, it runs as the
``postgres`` user (``runuser``). When it cannot be started it raises
:class:`PostgresUnavailableError`, whose message says why (tests skip with it).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import psycopg.sql

from ._errors import PersistError

ENV_BIN = "TRIO_RECONCILE_PG_BIN"
START_TIMEOUT = 60
_databases = itertools.count()


class PostgresUnavailableError(PersistError):
    """No PostgreSQL server can be started here; the message says why."""


def find_binaries() -> Path | None:
    """The folder of the server's binaries (``initdb``, ``pg_ctl``), if any."""
    override = os.environ.get(ENV_BIN)
    if override:
        return Path(override) if (Path(override) / "initdb").is_file() else None
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


@contextlib.contextmanager
def temporary_postgres(*, fsync: bool = True) -> Iterator[str]:
    """Start a cluster; yield the libpq URL of its ``postgres`` database (the
    superuser ``postgres``, trusted on the socket); stop and remove it at the
    end. ``fsync=False`` trades the server's crash safety for speed (tests)."""
    binaries = find_binaries()
    if binaries is None:
        raise PostgresUnavailableError(
            "no PostgreSQL server binaries (initdb): install the 'postgresql' package "
            f"or set ${ENV_BIN}"
        )
    run_as: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise PostgresUnavailableError("running as root without runuser to drop to postgres")
        try:
            import pwd

            user = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailableError(
                "running as root and there is no 'postgres' user to run the server as"
            ) from None
        run_as = ["runuser", "-u", "postgres", "--"]
    folder = Path(tempfile.mkdtemp(prefix="trio-reconcile-pg-"))
    data = folder / "data"
    try:
        if run_as:
            os.chown(folder, user.pw_uid, user.pw_gid)
        _run(run_as, binaries / "initdb", "-D", str(data), "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--locale=C", "--no-sync")  # fmt: skip
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{folder}'\n"
                f"fsync = {'on' if fsync else 'off'}\n"
                "max_connections = 50\n"
            )
        _run(run_as, binaries / "pg_ctl", "-D", str(data), "-l", str(folder / "log"), "-w",
             "-t", str(START_TIMEOUT), "start")  # fmt: skip
        try:
            yield f"postgresql://postgres@/postgres?host={quote(str(folder), safe='')}"
        finally:
            _run(run_as, binaries / "pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_database(admin_url: str) -> str:
    """A new empty database on the server of ``admin_url`` (a
    ``postgresql://`` URL); return its URL."""
    name = f"trio_reconcile_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
    return urlunsplit(urlsplit(admin_url)._replace(path="/" + name))


def _run(run_as: list[str], tool: Path, *args: str) -> None:
    result = subprocess.run(
        [*run_as, str(tool), *args], capture_output=True, text=True, check=False
    )
    if result.returncode:
        output = (result.stderr or result.stdout).strip()[-500:]
        raise PostgresUnavailableError(f"{tool.name} failed ({result.returncode}): {output}")
