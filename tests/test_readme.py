"""The README's code runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.parametrize("block", BLOCKS, ids=["actors", "replica"])
def test_the_readme_code_runs(block: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stderr) == (0, "")


def test_the_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text[text.index("## Set up and run") : text.index("## What is built")]
    blocks = re.findall(r"```sh\n(.*?)```", setup, re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    assert [command for command in commands if command] == ["./run main", "./run test"]
    assert text.count("./run ") == 2
