"""A node process, started by :func:`actors.net.open_node_process` with
``python -c`` and :data:`~actors.net._process.BOOTSTRAP`, which reads the
JSON line of where to import from, puts the parent's ``sys.path`` in place
and calls :func:`main` here.

:func:`main` reads the pickled :class:`~actors.net._process.ChildSpec`
(behind its length), loads the parent's main module as ``__mp_main__`` (with
the parent's ``sys.argv``), opens an actor system and a node, starts the
spec's function, dials its parent, and runs until the function returns, the
connection to the parent goes, or its standard input ends (the parent's end
of the pipe closed: the parent ended, even before the child connected).
Not for running by hand.
"""

from __future__ import annotations

import importlib
import os
import pickle
import runpy
import sys
import types
from typing import Any

importing_main = False
"""True while the parent's main module loads: ``open_node_process`` refuses
to start a node process from there (a script's unguarded top level)."""


def _read_exactly(size: int) -> bytes | None:
    """``size`` bytes of standard input, or None if it ended first (the
    parent is gone)."""
    data = bytearray()
    while len(data) < size:
        chunk = sys.stdin.buffer.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _import_main(origin: dict[str, Any]) -> None:
    """Make the parent's main module this process's ``__main__`` (under the
    name ``__mp_main__``, so its ``if __name__ == "__main__":`` part does not
    run), for what was pickled from it."""
    global importing_main
    sys.argv[:] = origin.get("argv") or [""]
    name = origin.get("main_module")
    importing_main = True
    try:
        if name is not None and name.endswith(".__main__"):  # python -m package
            namespace = runpy.run_module(name, run_name="__mp_main__")
            module = types.ModuleType("__mp_main__")
            module.__dict__.update(namespace)
        elif name is not None and name != "__main__":  # python -m module
            module = importlib.import_module(name)
        elif "main_file" in origin:  # python script.py
            module = types.ModuleType("__mp_main__")
            module.__dict__.update(runpy.run_path(origin["main_file"], run_name="__mp_main__"))
        else:  # python -c, or an interactive parent: nothing was defined there
            module = types.ModuleType("__mp_main__")
    finally:
        importing_main = False
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
        node.incarnation = spec.incarnation  # drawn by the parent, who knows us by it

        async def watch_stdin() -> None:
            """The parent's end of the pipe closed: it is gone, or done."""
            stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            async with stream:
                while await stream.receive_some():
                    pass
            nursery.cancel_scope.cancel()

        async def run_main(task_status: trio.TaskStatus[None]) -> None:
            await spec.main(node, *spec.args, task_status=task_status)
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch_stdin)
        await nursery.start(run_main)
        parent = await node.connect(spec.parent)
        await parent.closed.wait()
        nursery.cancel_scope.cancel()


def main(origin: dict[str, Any]) -> int:
    """The node process, once :data:`~actors.net._process.BOOTSTRAP` read
    ``origin`` (the JSON line) and put the parent's ``sys.path`` in place."""
    size = _read_exactly(8)
    pickled = None if size is None else _read_exactly(int.from_bytes(size, "big"))
    if pickled is None:
        return 1  # the parent went before it handed everything over
    _import_main(origin)
    try:
        spec = pickle.loads(pickled)  # from the parent, over a pipe only it holds
    except Exception as error:  # unpickling raises many kinds
        sys.stderr.write(
            f"actors.net node process: cannot load what its parent handed over: {error!r} "
            "(what it runs must be importable: at the top level of a module or of the "
            "parent's script)\n"
        )
        return 1

    import trio

    trio.run(_run, spec)
    return 0
