"""actors.net is imported explicitly: ``import actors`` loads neither it nor msgspec."""

from __future__ import annotations

import subprocess
import sys


def test_importing_actors_loads_neither_the_network_layer_nor_msgspec() -> None:
    code = (
        "import sys, actors; "
        "print(sorted(m for m in sys.modules if m in ('actors.net', 'msgspec')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout == "[]\n"


def test_the_network_layer_names_itself_as_its_module() -> None:
    import actors.net

    names = {name for name in vars(actors.net) if not name.startswith("_")}
    for name in names - {"Event", "Dialer", "DeadLetters"}:  # type aliases
        value = getattr(actors.net, name)
        if isinstance(value, type) or callable(value):
            assert value.__module__ == "actors.net", name
    assert "open_node" in names
