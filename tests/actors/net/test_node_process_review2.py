"""A second hostile review (session 15) of open_node_process, with real
processes (every wait bounded): each test failed, for a defect since fixed,
on the reviewed code."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

APP_MAIN = """
import trio, actors
from actors.net import Node, open_node, open_node_process
from tests.actors.messages import SECRET, codec

async def main(node: Node, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    await trio.sleep_forever()

async def run() -> None:
    with trio.fail_after(40):
        async with actors.open_system() as system, open_node(
            system, name="parent", secret=SECRET, codec=codec()
        ) as node:
            async with open_node_process(node, main, name="child", start_timeout=20):
                print("started")

if __name__ == "__main__":
    trio.run(run)
"""


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        argv, cwd=cwd, env=env, timeout=60, capture_output=True, text=True, check=False
    )


def test_a_directory_run_as_a_script_hands_its_functions_to_the_child(tmp_path: Path) -> None:
    # `python app/` (a directory with __main__.py): __main__.__spec__.name is
    # "__main__", so _origin() records main_module="__main__" and no
    # main_file; the child's _import_main then skips both branches and loads
    # an empty module, and unpickling `__main__.main` fails: the child exits
    # 1 and the parent gets NodeProcessError. multiprocessing handles it.
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(APP_MAIN)
    done = _run([sys.executable, str(app)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "started" in done.stdout


def test_a_zipapp_hands_its_functions_to_the_child(tmp_path: Path) -> None:
    archive = tmp_path / "app.pyz"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("__main__.py", APP_MAIN)
    done = _run([sys.executable, str(archive)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "started" in done.stdout
