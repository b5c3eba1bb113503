"""Why a network call got no answer, in words a user can act on.

Read from the exception chain (a client library's error, the transport's, the socket's),
never from an exception's text shown as it is: that would leak details (URLs with
tokens) and read like a crash.
"""

from __future__ import annotations

import socket


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and everything it was raised from, outermost first (cycles cut)."""
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and all(link is not other for other in seen):
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def unreachable_cause(exc: BaseException) -> str:
    """``the connection was refused (nothing listens there)``, and the like."""
    chain = _chain(exc)
    names = {type(link).__name__ for link in chain}
    text = " ".join(str(link) for link in chain).lower()
    if any(isinstance(link, ConnectionRefusedError) for link in chain) or "refused" in text:
        return "the connection was refused (nothing listens there)"
    if any(isinstance(link, socket.gaierror) for link in chain) or any(
        words in text
        for words in ("name or service not known", "nodename nor servname", "name resolution")
    ):
        return "the name does not resolve (DNS, or no network)"
    if names & {"ConnectTimeout", "TimedOut", "APITimeoutError", "TimeoutError", "ReadTimeout"}:
        return "the connection timed out (a firewall, a proxy, or no network)"
    if "ProxyError" in names:
        return "the proxy refused the connection"
    if any(isinstance(link, ssl_error) for link in chain for ssl_error in _ssl_errors()):
        return "the TLS handshake failed (a proxy that intercepts HTTPS, or a wrong base_url)"
    if names & {"ConnectError", "APIConnectionError", "NetworkError"} or any(
        isinstance(link, OSError) for link in chain
    ):
        return "no connection could be made (no network, or no route to it)"
    return "the network failed mid-request"


def _ssl_errors() -> tuple[type[BaseException], ...]:
    import ssl

    return (ssl.SSLError,)
