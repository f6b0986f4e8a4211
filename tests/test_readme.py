"""The README's set-up commands (its code blocks run in tests/test_doc_examples.py)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text[text.index("## Set up and run") : text.index("## What is built")]
    blocks = re.findall(r"```sh\n(.*?)```", setup, re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    assert [command for command in commands if command] == ["./run main", "./run test"]
    assert text.count("./run ") == 2
