"""Which mails are read at all, and whose: the header's bounds, robots, the sender, and
the trusted server's word on their authentication (no server needed)."""

from __future__ import annotations

from email.message import EmailMessage

from tests.email.world import authentication
from thalos_bot_email.letter import HEADER_MAX_BYTES, authenticated, parse, robot

AUTHSERV = "mx.example.test"


def _raw(*headers: str, body: str = "hi") -> bytes:
    return ("\r\n".join(headers) + "\r\n\r\n" + body + "\r\n").encode()


def _mail(*headers: str) -> EmailMessage:
    mail = parse(_raw("From: ann@example.test", "Message-ID: <1@example.test>", *headers))
    assert mail is not None
    return mail


def test_a_header_past_its_bounds_is_not_parsed() -> None:
    assert parse(_raw("From: ann@example.test", "X-Pad: " + "a" * HEADER_MAX_BYTES)) is None
    many = [f"X-{n}: {n}" for n in range(1001)]
    assert parse(_raw("From: ann@example.test", *many)) is None
    assert parse(_raw("From: ann@example.test", *many[:50])) is not None


def test_robots_and_the_bot_itself() -> None:
    own = "bot@example.test"
    assert robot(_mail(), own) is None
    assert robot(_mail("Auto-Submitted: no"), own) is None
    assert robot(_mail("Auto-Submitted: auto-replied"), own) == "auto-submitted"
    assert robot(_mail("Precedence: bulk"), own) == "precedence"
    assert robot(_mail("List-Id: <dev.example.test>"), own) == "mailing list"
    assert robot(_mail("Return-Path: <>"), own) == "bounce"
    bounce = parse(_raw("From: MAILER-DAEMON@example.test"))
    assert bounce is not None
    assert robot(bounce, own) == "bounce"
    itself = parse(_raw("From: Bot <BOT@example.test>"))
    assert itself is not None
    assert robot(itself, own) == "own address"
    two = parse(_raw("From: ann@example.test, eve@example.test"))
    assert two is not None
    assert robot(two, own) == "no single From address"


def test_only_the_trusted_servers_topmost_results_count() -> None:
    good = f"Authentication-Results: {authentication('example.test')}"
    assert authenticated(_mail(good), AUTHSERV)
    assert not authenticated(_mail(), AUTHSERV), "no results: forged until shown otherwise"
    other = "Authentication-Results: mx.attacker.test; dkim=pass header.d=example.test"
    assert not authenticated(_mail(other), AUTHSERV)
    failed = f"Authentication-Results: {AUTHSERV}; dkim=fail header.d=example.test"
    assert not authenticated(_mail(failed), AUTHSERV)
    unaligned = f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=elsewhere.test"
    assert not authenticated(_mail(unaligned), AUTHSERV)
    spf = f"Authentication-Results: {AUTHSERV}; spf=pass smtp.mailfrom=x@example.test"
    assert authenticated(_mail(spf), AUTHSERV)
    # A forged result below a header of another kind is not the server's topmost run.
    forged = f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=example.test"
    assert not authenticated(_mail(failed, "Received: from x", forged), AUTHSERV)
