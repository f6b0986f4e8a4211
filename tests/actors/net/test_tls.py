"""Nodes over TLS (``trio.SSLStream``), with certificates made by trustme,
on the real clock, bounded by ``trio.fail_after``."""

from __future__ import annotations

import ssl

import pytest
import trio

import actors
from actors import NodeDown
from actors.net import HandshakeError, open_node

from ..messages import SECRET, codec
from .test_tcp import TIME_LIMIT, round_trips

trustme = pytest.importorskip("trustme", reason="trustme makes the TLS tests' certificates")


def test_two_nodes_talk_over_tls() -> None:
    authority = trustme.CA()
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_ssl)
    client_ssl = ssl.create_default_context()
    authority.configure_trust(client_ssl)

    async def main() -> list[object]:
        with trio.fail_after(TIME_LIMIT):
            return await round_trips(server_ssl, client_ssl)

    assert trio.run(main) == [4950, "OVER TCP", NodeDown("b")]


def test_a_client_that_does_not_trust_the_certificate_is_refused() -> None:
    authority = trustme.CA()
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_ssl)
    client_ssl = ssl.create_default_context()  # trusts the system's authorities only

    async def main() -> None:
        with trio.fail_after(TIME_LIMIT):
            async with (
                actors.open_system() as system,
                open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as a,
                open_node(
                    system, name="b", secret=SECRET, codec=codec(), ssl_context=server_ssl
                ) as b,
            ):
                assert b.address is not None
                with pytest.raises(
                    HandshakeError,
                    match=r"^the connection broke during the handshake: .*CERTIFICATE_VERIFY",
                ):
                    await a.connect(b.address, ssl_context=client_ssl)

    trio.run(main)
