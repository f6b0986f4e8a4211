"""Listeners: the functions to call after a change, with one rule for one
that raises. Shards, arrangements and the replica's metrics wake their
readers through it."""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.define(eq=False)
class Listeners:
    """Functions to call after each change of ``what`` (named in errors).

    A listener that raises does not undo the change, nor keep the other
    listeners from being called (they would miss the change and sleep on):
    every listener is called, then the error (or a group of them) is raised
    by the call that made the change."""

    what: str
    # Invariant: called in the order they listened.
    _wakes: dict[int, Callable[[], None]] = attrs.field(factory=dict)
    _next: int = 0

    def listen(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` after every change; return the function that stops it
        (calling it twice does nothing)."""
        key = self._next
        self._next += 1
        self._wakes[key] = wake

        def stop() -> None:
            self._wakes.pop(key, None)

        return stop

    def notify(self) -> None:
        """Call every listener (a listener that stops, or listens, meanwhile
        changes this round's list not at all)."""
        if not self._wakes:
            return
        errors: list[BaseException] = []
        for wake in list(self._wakes.values()):
            try:
                wake()
            except BaseException as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise BaseExceptionGroup(f"listeners of {self.what} raised", errors)

    def __len__(self) -> int:
        return len(self._wakes)
