"""A node process: ``python -m actors.net._child``, started by
:func:`actors.net.open_node_process`.

It reads a JSON line (where to import from) and a pickled
:class:`~actors.net._process.ChildSpec` from its standard input, opens an
actor system and a node, dials its parent and runs the spec's function, as
``open_node_process`` documents. Not for running by hand.
"""

from __future__ import annotations

import importlib
import json
import pickle
import runpy
import sys
import types
from typing import Any


def _import_main(origin: dict[str, Any]) -> None:
    """Make the parent's main module this process's ``__main__`` (under the
    name ``__mp_main__``, so its ``if __name__ == "__main__":`` part does not
    run), for what was pickled from it."""
    sys.path[:] = origin["path"]
    name = origin.get("main_module")
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return  # a package's command (python -m pytest): nothing was defined there
    if name is not None:
        module = importlib.import_module(name)
    elif "main_file" in origin:
        module = types.ModuleType("__mp_main__")
        module.__dict__.update(runpy.run_path(origin["main_file"], run_name="__mp_main__"))
    else:
        return
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


async def _run(spec: Any) -> None:
    import trio

    import actors
    from actors.net import Codec, Values, open_node

    values = Values(max_depth=spec.max_depth)
    for name, cls in spec.values:
        values.register(cls, name=name)
    codec = Codec(values=values)
    for name, cls in spec.messages:
        codec.register(cls, name=name)
    async with (
        actors.open_system() as system,
        open_node(
            system, name=spec.name, secret=spec.secret, codec=codec, listen=None, **spec.settings
        ) as node,
        trio.open_nursery() as nursery,
    ):

        async def run_main(task_status: trio.TaskStatus[None]) -> None:
            await spec.main(node, *spec.args, task_status=task_status)
            nursery.cancel_scope.cancel()

        await nursery.start(run_main)
        parent = await node.connect(spec.parent)
        await parent.closed.wait()
        nursery.cancel_scope.cancel()


def main() -> int:
    data = sys.stdin.buffer.read()
    header, _, pickled = data.partition(b"\n")
    _import_main(json.loads(header))
    spec = pickle.loads(pickled)  # from the parent, over a pipe only it holds

    import trio

    trio.run(_run, spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
