"""What :mod:`replica.storage.persist` needs of the extras: msgspec (the
``persist`` extra), checked when it is imported, and psycopg (``postgres``),
when PostgreSQL is asked for. Each missing one is named with its extra (the
message :mod:`actors._extras` gives; this layer does not import actors)."""

from __future__ import annotations


def missing(module: str, extra: str, user: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"{user} needs {module}, which is not installed: pip install 'trio-reconcile[{extra}]'",
        name=module,
    )


def require_psycopg(user: str) -> None:
    try:
        import psycopg  # noqa: F401 (only whether it imports)
    except ModuleNotFoundError as error:
        if error.name != "psycopg":
            raise
        raise missing("psycopg", "postgres", user) from None


try:
    import msgspec  # noqa: F401 (only whether it imports)
except ModuleNotFoundError as error:
    if error.name != "msgspec":
        raise
    raise missing("msgspec", "persist", "replica.storage.persist (durable shards)") from None
