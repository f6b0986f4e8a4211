"""TLS for the nodes of a replica on OS processes (``--tls-cert``,
``--tls-key``, ``--tls-ca``).

Every node (each replica process, the shard host, the controller) presents
the same certificate and accepts a peer only if its certificate is signed
by the CA: mutual TLS, beside the shared secret's handshake inside it. A
dialler checks the certificate against the host it dials (an IP address
such as ``127.0.0.1`` must be among the certificate's names).
"""

from __future__ import annotations

import os
import ssl
import stat

import attrs

from ._errors import TlsError


@attrs.frozen
class TlsFiles:
    """The certificate chain and key every node presents, and the CA it
    trusts (PEM files)."""

    cert: str
    key: str
    ca: str

    @classmethod
    def from_options(cls, cert: str | None, key: str | None, ca: str | None) -> TlsFiles | None:
        """The files, from options that are all given or none (then None).
        Raises :class:`TlsError` naming the missing ones."""
        if cert is not None and key is not None and ca is not None:
            return cls(cert, key, ca)
        given = {"--tls-cert": cert, "--tls-key": key, "--tls-ca": ca}
        missing = [option for option, value in given.items() if value is None]
        if len(missing) < len(given):
            named = [option for option, value in given.items() if value is not None]
            raise TlsError(
                f"{', '.join(named)} given without {' and '.join(missing)} (TLS takes all three)"
            )
        return None

    def server_context(self) -> ssl.SSLContext:
        """What a listening node wraps each accepted connection in: it
        presents the certificate and requires the dialler's. Raises
        :class:`TlsError` for a file that is not a regular one (see
        :meth:`_check_regular`)."""
        self._check_regular()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=self.ca)
        context.verify_mode = ssl.CERT_REQUIRED
        self._load_chain(context)
        return context

    def client_context(self) -> ssl.SSLContext:
        """What a dialling node wraps its connections in: it checks the
        other's certificate and name, and presents its own. Raises
        :class:`TlsError` for a file that is not a regular one."""
        self._check_regular()
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca)
        self._load_chain(context)
        return context

    def _check_regular(self) -> None:
        """A :class:`TlsError` if a file is there but is not a regular file
        (a FIFO, a pipe such as shell process substitution gives, a device):
        ssl opens the files by path (the key and chain only so), for every
        context, and so does every process the driver starts, so a pipe,
        read once, cannot serve, and opening a FIFO with no writer blocks
        for ever. Refused before anything opens them; a missing file is
        left to ssl to name."""
        for option, path in (
            ("--tls-cert", self.cert),
            ("--tls-key", self.key),
            ("--tls-ca", self.ca),
        ):
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            if not stat.S_ISREG(mode):
                raise TlsError(
                    f"the TLS files do not load: {path} ({option}) is not a regular file (ssl "
                    "loads them by path, in every process: a FIFO or a pipe cannot serve)"
                )

    def _load_chain(self, context: ssl.SSLContext) -> None:
        # A passphrase is refused: OpenSSL would prompt for it on the
        # terminal, in every process that loads the key (each spawned one).
        def no_passphrase() -> str:
            raise TlsError(
                f"the TLS files do not load: {self.key} is encrypted (give it without a passphrase)"
            )

        context.load_cert_chain(self.cert, self.key, password=no_passphrase)

    def check(self) -> None:
        """Load both contexts once: a :class:`TlsError` names a file that
        does not load (before any process starts)."""
        try:
            self.server_context()
            self.client_context()
        except (OSError, ssl.SSLError) as error:
            raise TlsError(f"the TLS files do not load: {error}") from None
