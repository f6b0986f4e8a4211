"""An install carries only what it uses: trio and attrs are required, msgspec
(the ``net`` and ``persist`` extras) and psycopg (``postgres``) are not.
Without them, everything else works, and what needs one says which extra to
install. Each check runs in a fresh interpreter in which importing the
missing modules fails, as on an install without the extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.paths import ROOT

WITHOUT = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {missing!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Missing())
"""


def run_without(missing: set[str], code: str) -> subprocess.CompletedProcess[str]:
    program = WITHOUT.format(missing=sorted(missing)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_only_trio_and_attrs_are_required() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = [entry.split(">")[0].split("[")[0] for entry in project["dependencies"]]
    assert required == ["trio", "attrs"]
    extras = project["optional-dependencies"]
    assert extras["net"] == extras["persist"] == ["msgspec>=0.18"]
    assert extras["postgres"] == ["msgspec>=0.18", "psycopg[binary]>=3.2"]


def test_without_the_extras_the_packages_import_and_the_demo_runs() -> None:
    result = run_without(
        {"msgspec", "psycopg"},
        """
        import actors, barrier, sharing, replica

        async def main() -> int:
            async with actors.open_system() as system:
                ref = await system.spawn(echo, name="echo")
                answer = await ref.ask(lambda reply: reply)
            return answer

        async def echo(inbox: actors.Inbox[actors.Reply[int]]) -> None:
            async for envelope in inbox:
                envelope.message.send(7)

        assert actors.run(main) == 7
        assert not [m for m in sys.modules if m.split(".")[0] in ("msgspec", "psycopg")]
        import _trio_reconcile_cli
        sys.argv = ["trio-reconcile", "demo"]
        sys.exit(_trio_reconcile_cli.main())
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "with the barrier it bound the new incarnation and the read answered" in result.stdout


@pytest.mark.parametrize(
    ("missing", "code", "message"),
    [
        (
            {"msgspec"},
            "import actors.net",
            "actors.net needs msgspec, which is not installed: pip install 'trio-reconcile[net]'",
        ),
        (
            {"msgspec"},
            "from replica import ShardCatalog\nShardCatalog.open('sqlite:x.db')",
            "replica.storage.persist (durable shards) needs msgspec, which is not installed: "
            "pip install 'trio-reconcile[persist]'",
        ),
        (
            {"psycopg"},
            "from replica.storage.persist import PostgresStorage",
            "replica.storage.persist.PostgresStorage needs psycopg, which is not installed: "
            "pip install 'trio-reconcile[postgres]'",
        ),
    ],
    ids=["nodes", "durable-shards", "postgres"],
)
def test_what_needs_an_extra_says_which(missing: set[str], code: str, message: str) -> None:
    result = run_without(missing, code)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"ModuleNotFoundError: {message}"


def test_a_postgresql_url_without_psycopg_is_a_storage_url_error() -> None:
    result = run_without(
        {"psycopg"},
        """
        from replica.storage.persist import StorageUrlError, open_storage
        try:
            open_storage("postgresql://me@localhost/db")
        except StorageUrlError as error:
            print(error)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "storage url 'postgresql://me@localhost/db' needs psycopg, which is not installed: "
        "pip install 'trio-reconcile[postgres]'"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["run", "replica/driver/specs/two_runtime_recreate_index.spec", "--spawn"],
        ["serve", "--process", "0", "--processes", "1", "--workers", "1", "--listen"],
    ],
    ids=["run-spawn", "serve"],
)
def test_the_command_without_the_net_extra_says_which_to_install(
    arguments: list[str], tmp_path: Path
) -> None:
    if arguments[0] == "serve":
        secret = tmp_path / "secret"
        secret.write_bytes(b"s" * 32)
        secret.chmod(0o600)
        arguments = [
            *arguments,
            "127.0.0.1:0",
            "--peers",
            "127.0.0.1:1",
            "--shards",
            "127.0.0.1:2",
            "--secret-file",
            str(secret),
        ]
    result = run_without(
        {"msgspec"},
        f"""
        import _trio_reconcile_cli
        sys.argv = ["trio-reconcile", *{arguments!r}]
        sys.exit(_trio_reconcile_cli.main())
        """,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1] == (
        "trio-reconcile: error: actors.net needs msgspec, which is not installed: "
        "pip install 'trio-reconcile[net]'"
    )
