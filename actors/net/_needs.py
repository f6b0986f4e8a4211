"""Imported first by :mod:`actors.net`: msgspec, the ``net`` extra, is there
or the import says so."""

from .._extras import missing

try:
    import msgspec  # noqa: F401 (only whether it imports)
except ModuleNotFoundError as error:
    if error.name != "msgspec":
        raise
    raise missing("msgspec", "net", "actors.net") from None
