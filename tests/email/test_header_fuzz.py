"""Fuzzing what arrives by mail: raw mails of any shape (broken encodings, huge and
repeated headers, forged or malformed ``Authentication-Results``, folded lines, NULs,
8-bit bytes, bad MIME boundaries, nested multiparts, broken base64) go through the
channel's reading (:func:`thalos_bot_email.letter.read`, the one door of the receiver
and of pairing). Each is admitted or refused, never raised on; nothing is admitted that
the trusted server did not vouch for, from anyone but the allowed sender."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from thalos_bot_email.letter import Admitted, Refused, read

OWN, AUTHSERV, ALLOWED = "bot@example.test", "mx.example.test", "ann@example.test"
DOMAINS = ["example.test", "sub.example.test", "evil.test", "EXAMPLE.TEST", "", "example.test."]

junk = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from('\x00\r\n\t;=()"<>@'),
    max_size=40,
)
encoded_word = st.builds(
    "=?{}?{}?{}?=".format,
    st.sampled_from(["utf-8", "x-unknown", "iso-8859-1", "utf-7", "", "utf-8*fr"]),
    st.sampled_from(["B", "Q", "b", "X"]),
    st.sampled_from(["w6k=", "=FF=FE", "####", "Zm9v", "", "=?="]),
)
address = st.builds(
    "{}{}@{}".format,
    st.sampled_from(["", "Ann <", '"a,b" <', "=?utf-8?b?QQ==?= <"]),
    st.sampled_from(["ann", "bot", "eve", "MAILER-DAEMON", "a\x00n", "ann@x"]),
    st.sampled_from(DOMAINS),
).map(lambda a: a + ">" if "<" in a else a)
result = st.builds(
    "{}={}{} {}={}{}".format,
    st.sampled_from(["dkim", "spf", "dmarc", "DKIM", "", "dkim(c)"]),
    st.sampled_from(["pass", "fail", "none", "PASS", "pass;", ""]),
    st.sampled_from(["", " (2048-bit key)", " (a (nested) comment)", " (unclosed"]),
    st.sampled_from(["header.d", "header.i", "smtp.mailfrom", "header.b", ""]),
    st.sampled_from([*DOMAINS, "ann@example.test", '"example.test"', "@"]),
    st.sampled_from(["", ";", "; spf=pass smtp.mailfrom=x@evil.test"]),
)


def _authentication(servers: list[str]) -> st.SearchStrategy[str]:
    return st.builds(
        "{}{}; {}".format,
        st.sampled_from(servers),
        st.sampled_from(["", " 1", " (comment"]),
        st.lists(result, max_size=3).map("; ".join),
    )


OTHERS = ["mx.evil.test", "", "mx.example.test.evil.test", "mx-example.test"]
authentication = _authentication([AUTHSERV, AUTHSERV.upper(), "(c) " + AUTHSERV, *OTHERS])
forged = _authentication(OTHERS)
"""Results written by anyone but the trusted server (or by nobody)."""
values = {
    "From": address | junk | encoded_word,
    "Authentication-Results": authentication | junk,
    "Message-ID": st.sampled_from(["<1@example.test>", "<>", "<a b>", "", "<<x>>"]) | junk,
    "References": st.lists(st.sampled_from(["<1@x>", "<2@y>", "<", "x"]), max_size=4).map(" ".join),
    "In-Reply-To": st.sampled_from(["<1@x>", ""]) | junk,
    "Subject": junk | encoded_word | st.sampled_from(["Re: a", "x" * 5000]),
    "Date": st.sampled_from(["Sat, 05 Dec 2026 10:00:00 +0000", "garbage", "", "31 Feb 99"]),
    "Auto-Submitted": st.sampled_from(["no", "auto-replied", "No; x", ""]),
    "Precedence": st.sampled_from(["bulk", "first-class", ""]),
    "Return-Path": st.sampled_from(["<>", "<ann@example.test>", ""]),
    "List-Id": st.just("<list.example.test>"),
    "Content-Type": st.sampled_from(
        [
            "text/plain; charset=utf-8",
            "text/plain; charset=x-unknown",
            "text/html; charset=utf-7",
            "multipart/mixed; boundary=b1",
            "multipart/alternative; boundary=",
            "multipart/mixed",
            'multipart/related; boundary="b1"; type=text/html',
            "message/rfc822",
            "image/png; name=a.png",
            "text/plain; charset*=utf-8''%FF",
        ]
    )
    | junk,
    "Content-Transfer-Encoding": st.sampled_from(["base64", "quoted-printable", "8bit", "x"]),
    "Content-Disposition": st.sampled_from(["attachment; filename=a.txt", "inline", "x;="]),
    "X-Junk": junk,
}
header = st.sampled_from(sorted(values)).flatmap(
    lambda name: st.tuples(st.just(name), values[name])
)
forged_header = header.map(lambda h: ("X-Was", h[1]) if h[0] == "Authentication-Results" else h)
forged_header |= st.tuples(st.just("Authentication-Results"), forged)
fold = st.sampled_from(["", "\r\n ", "\n\t", "\r\n\r\n "])
"""A folding (or a blank line, which ends the header early) put in a value."""


def _lines(headers: list[tuple[str, str]], folds: list[str]) -> str:
    lines = []
    for n, (name, value) in enumerate(headers):
        cut = len(value) // 2
        lines.append(f"{name}: {value[:cut]}{folds[n % len(folds)]}{value[cut:]}")
    return "\r\n".join(lines)


part: st.SearchStrategy[str] = st.deferred(
    lambda: st.builds(
        "{}\r\n\r\n{}".format,
        st.lists(header, max_size=3).map(lambda hs: _lines(hs, [""])),
        st.sampled_from(["hi", "=FF=\r\nx", "!!notbase64!!", "Zm9v", "\x00"]) | nested,
    )
)
nested: st.SearchStrategy[str] = st.builds(
    "--{0}\r\n{1}\r\n--{2}\r\n{1}\r\n--{0}--{3}".format,
    st.sampled_from(["b1", "b2", ""]),
    part,
    st.sampled_from(["b1", "b3"]),
    st.sampled_from(["", "\r\ntrailing", "\r\n--b1"]),
)
body = st.sampled_from(["hello", "/status\r\n-- \r\nsig", "> quoted\r\nnew", "\x00" * 3]) | nested


def _mails(
    headers: st.SearchStrategy[tuple[str, str]], results: st.SearchStrategy[str]
) -> st.SearchStrategy[bytes]:
    """Mostly a person's mail (an allowed From, a Message-ID, results) with hostile
    headers among its own, in any order; sometimes anything at all."""
    own = st.tuples(
        st.tuples(st.just("From"), st.sampled_from([ALLOWED, f"Ann <{ALLOWED}>"]) | address),
        st.tuples(st.just("Message-ID"), st.just("<1@example.test>") | values["Message-ID"]),
        st.tuples(st.just("Authentication-Results"), results),
    )
    every = st.tuples(own, st.lists(headers, max_size=5)).flatmap(
        lambda t: st.permutations([*t[0], *t[1]])
    )
    return st.builds(
        lambda headers, folds, text, eol, eight_bit: (
            (_lines(headers, folds) + "\r\n\r\n" + text).replace("\r\n", eol).encode() + eight_bit
        ),
        every | st.lists(headers, max_size=14),
        st.lists(fold, min_size=1, max_size=3),
        body,
        st.sampled_from(["\r\n", "\n", "\r"]),
        st.sampled_from([b"", b"\xff\xfe\x80", "é".encode("latin-1")]),
    )


PASS = f"{AUTHSERV}; dkim=pass header.d=example.test"
raw_mail = _mails(header, st.just(PASS) | authentication)
MIME = ["Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "Subject", "Date"]
letter = st.builds(
    lambda mime, text: (
        f"From: {ALLOWED}\r\nMessage-ID: <1@example.test>\r\nAuthentication-Results: {PASS}"
        f"\r\n{_lines(mime, [''])}\r\n\r\n{text}"
    ).encode(),
    st.lists(st.sampled_from(MIME).flatmap(lambda n: st.tuples(st.just(n), values[n])), max_size=4),
    body,
)
"""A mail the bot answers, with hostile MIME (its body, parts, charsets, encodings)."""
forged_mail = _mails(forged_header, forged)
"""A mail whose every Authentication-Results is another server's (or nobody's)."""


huge = st.builds(
    lambda name, shape: (f"{name}: {'x' * shape[1]}\r\n" * shape[0] + "\r\nbody").encode(),
    st.sampled_from(["From", "Authentication-Results", "Received", "X-A"]),
    st.sampled_from([(1, 10), (50, 1000), (1001, 10), (3, 100_000), (1, 300_000)]),
)
"""Repeated and huge headers, up to past the bounds (the header's bytes, its fields)."""

TRUSTED_PASS = re.compile(
    rb"(?i)(?:^|[\r\n])authentication-results:[ \t]*(?:\([^)]*\)[ \t]*)?"
    + re.escape(AUTHSERV.encode())
    + rb"[^\r\n]*pass"
)
UNFOLD = re.compile(rb"(?:\r\n|\r|\n)[ \t]")


def wrong(raw: bytes, judged: object) -> str | None:
    """What is wrong with how ``raw`` was judged (None: nothing)."""
    if not isinstance(judged, Admitted | Refused):
        return f"judged as {type(judged).__name__}"
    if isinstance(judged, Admitted):
        if judged.address != ALLOWED:
            return "admitted from another address than the allowed one"
        if not TRUSTED_PASS.search(UNFOLD.sub(b" ", raw)):
            return "admitted without the trusted server's pass"
    return None


def _judged(raw: bytes) -> Admitted | Refused:
    judged = read(raw, OWN, AUTHSERV, [ALLOWED])
    assert wrong(raw, judged) is None, wrong(raw, judged)
    return judged


@settings(max_examples=examples(300), deadline=None, database=None)
@given(st.one_of(raw_mail, huge, st.binary(max_size=300)))
def test_any_mail_is_admitted_or_refused_never_raised_on(raw: bytes) -> None:
    _judged(raw)


@settings(max_examples=examples(150), deadline=None, database=None)
@given(forged_mail)
def test_without_the_trusted_servers_word_nothing_is_admitted(raw: bytes) -> None:
    assert isinstance(read(raw, OWN, AUTHSERV, [ALLOWED]), Refused)


@settings(max_examples=examples(150), deadline=None, database=None)
@given(letter)
def test_any_body_is_read_or_refused_as_unreadable(raw: bytes) -> None:
    judged = _judged(raw)
    assert isinstance(judged, Admitted) or judged.event == "email_mail_unreadable", judged
    if isinstance(judged, Admitted):
        assert all(part.name and "/" in part.mime for part in judged.files)


def test_the_fuzzer_reaches_an_admission() -> None:
    """The strategies can make a mail that is let in (else the oracle above is idle)."""
    raw = (
        f"From: {ALLOWED}\r\nMessage-ID: <1@example.test>\r\n"
        f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=example.test\r\n\r\nhi"
    ).encode()
    assert isinstance(_judged(raw), Admitted)
    robot = _judged(raw.replace(b"\r\n\r\nhi", b"\r\nAuto-Submitted: yes\r\n\r\n"))
    assert isinstance(robot, Refused)
    assert robot.message_id == "<1@example.test>", "a refused mail is done by its Message-ID too"
