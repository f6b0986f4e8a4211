"""Which storage a URL names: the one place that knows every backend (they
know only :mod:`._storage`, the protocol they implement). PostgreSQL's
module, and psycopg with it, is imported only when a URL names it."""

from __future__ import annotations

from ._errors import StorageUrlError
from ._needs import require_psycopg
from ._storage import MemoryStorage, ShardStorage


def open_storage(url: str) -> ShardStorage:
    """Open the storage ``url`` names:

    * ``memory:`` -- a fresh :class:`MemoryStorage`;
    * ``sqlite:PATH`` (or ``sqlite:///ABSOLUTE/PATH``) -- a SQLite file,
      created if missing, in WAL mode (:class:`~replica.storage.persist.SqliteStorage`);
    * ``postgresql://...`` or ``postgres://...`` -- a PostgreSQL database, the
      URL as libpq takes it (:class:`~replica.storage.persist.PostgresStorage`).

    Raises :class:`~replica.storage.persist.StorageUrlError` for another scheme, and
    the storage's own errors if it cannot be opened."""
    if "\0" in url:  # C libraries would read it up to the NUL: another store
        raise StorageUrlError(f"storage url {url!r} holds a NUL")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        if not url.lower().startswith("sqlite:"):  # a path may hold any byte
            raise StorageUrlError(f"storage url {url!r} is not UTF-8") from None
    scheme, colon, rest = url.partition(":")
    if not colon:
        raise StorageUrlError(f"storage url {url!r} has no scheme (memory:, sqlite:, postgresql:)")
    match scheme.lower():
        case "memory":
            if rest:
                raise StorageUrlError(f"storage url {url!r}: memory: takes nothing after the colon")
            return MemoryStorage()
        case "sqlite":
            from ._sqlite import SqliteStorage

            path = rest[2:] if rest.startswith("//") else rest
            if not path:
                raise StorageUrlError(f"storage url {url!r} names no file (sqlite:PATH)")
            return SqliteStorage.open(path)
        case "postgresql" | "postgres":
            try:
                require_psycopg(f"storage url {url!r}")
            except ModuleNotFoundError as error:
                raise StorageUrlError(str(error)) from None
            from ._postgres import PostgresStorage

            return PostgresStorage.open(url)
    raise StorageUrlError(
        f"storage url {url!r} has an unknown scheme {scheme!r} (memory:, sqlite:, postgresql:)"
    )
