"""Requests from the outside world to the web listener, as hypothesis strategies: the
login form, an approval's answer, the event stream's resume point, the API's headers
and bodies, and webhook deliveries (bad, missing and valid signatures over any body).

:func:`send` sends one and returns its status; ``tests/web/test_listener_fuzz.py`` runs
a bounded number against a real daemon, ``bench/fuzz.py`` many more.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import strategies as st

from thalos_bot.hooks.signature import sign

HOOK_SECRET_ENV = "THALOS_FUZZ_HOOK_SECRET"
HOOK_SECRET = "fuzz-secret-0123456789"
HOOKS = f"""
rate_limit = 0
api = true

[[hooks]]
name = "gh"
path = "/hooks/gh"
secret_env = "{HOOK_SECRET_ENV}"
scheme = "github"
principal = "p1"
deliver_to = "nowhere"
prompt = "Issue {{issue.number}}: {{issue.title}} by {{sender.login}}"

[[hooks]]
name = "ci"
path = "/hooks/ci"
secret_env = "{HOOK_SECRET_ENV}"
scheme = "generic"
principal = "p1"
deliver_to = "nowhere"
prompt = "Build {{build.id}} ended: {{build.status}}"
"""
"""What the fuzzed daemon's ``[channels.web]`` adds: no rate limit (the fuzzer is one
address), the API, and one hook of each scheme."""

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=25,
)
header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=60
).map(str.strip)
"""A header value as HTTP carries it (latin-1, no control characters)."""
deep = st.integers(500, 5_000).map(lambda n: "[" * n + "]" * n)
"""JSON nested past what a recursive parser survives."""
bodies = (
    json_values.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=300)
    | deep.map(str.encode)
    | st.text(max_size=200).map(str.encode)
)


@dataclass(frozen=True)
class Probe:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    logged_in: bool = False
    stream: bool = False
    own_csrf: bool = False
    """It brings its own CSRF token (else the session's is sent)."""

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 200 else self.body[:200] + b"..."
        return (
            f"Probe({self.method} {self.path} {self.headers!r} {body!r} ({len(self.body)} bytes))"
        )


def approve_probe(body: bytes) -> Probe:
    return Probe("POST", "/api/approve", {"content-type": "application/json"}, body, logged_in=True)


answers = st.fixed_dictionaries(
    {
        "id": st.text(max_size=10) | json_values,
        "verdict": st.sampled_from(["approved", "denied"]) | json_values,
    }
).map(lambda v: json.dumps(v).encode())
login = st.builds(
    lambda body, kind: Probe("POST", "/login", {"content-type": kind}, body),
    bodies | st.text(max_size=80).map(lambda c: f"code={c}".encode()),
    st.sampled_from(
        ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]
    ),
)
approve = (answers | bodies).map(approve_probe)
events = st.builds(
    lambda last: Probe("GET", "/api/events", {"last-event-id": last}, logged_in=True, stream=True),
    header_text | st.integers(-5, 10**30).map(str) | st.just("1:2"),
)
api = st.builds(
    lambda auth, body, named: Probe(
        "POST",
        "/v1/chat/completions",
        {"authorization": auth, "content-type": "application/json", "x-thalos-conversation": named},
        body,
    ),
    st.sampled_from(["", "Bearer", "Basic x"]) | header_text.map(lambda t: f"Bearer {t}".strip()),
    bodies,
    header_text,
)


def _github(body: bytes, event: str, delivery: str, signed: bool, signature: str) -> Probe:
    value = sign(HOOK_SECRET.encode(), body) if signed else signature
    headers = {"x-hub-signature-256": value, "x-github-event": event, "x-github-delivery": delivery}
    return Probe("POST", "/hooks/gh", headers, body)


def generic_probe(body: bytes, stamp: str, signed: bool, delivery: str) -> Probe:
    now = str(int(time.time())) if stamp == "now" else stamp
    value = sign(HOOK_SECRET.encode(), now.encode() + b"." + body) if signed else "sha256=0"
    headers = {"x-signature": value, "x-timestamp": now, "x-delivery-id": delivery}
    return Probe("POST", "/hooks/ci", headers, body)


hook_payloads = (
    st.fixed_dictionaries(
        {},
        optional={
            "issue": json_values
            | st.fixed_dictionaries({"number": json_values, "title": json_values}),
            "sender": json_values | st.fixed_dictionaries({"login": json_values}),
            "build": json_values
            | st.fixed_dictionaries({"id": json_values, "status": json_values}),
        },
    ).map(lambda v: json.dumps(v).encode())
    | bodies
)
hooks = st.builds(
    _github,
    hook_payloads,
    st.sampled_from(["issues", "ping", ""]) | header_text,
    header_text,
    st.booleans(),
    header_text,
) | st.builds(
    generic_probe,
    hook_payloads,
    st.sampled_from(["now", "0", "²³", "¹", ""]) | header_text,
    st.booleans(),
    header_text,
)
cookies = st.builds(
    lambda name, value: Probe("GET", "/", {"cookie": f"{name}={value}"}),
    st.sampled_from(["thalos_web", "x"]),
    header_text.map(lambda t: t.replace(";", "")) | st.just("a.\xe9"),
)
csrf_tokens = st.builds(
    lambda token: Probe(
        "POST",
        "/api/approve",
        {"x-csrf-token": token, "content-type": "application/json"},
        b'{"id": "x", "verdict": "denied"}',
        logged_in=True,
        own_csrf=True,
    ),
    header_text | st.just("\xe9"),
)
probes = st.one_of(login, approve, events, api, hooks, cookies, csrf_tokens)


def send(plain: httpx.Client, logged_in: httpx.Client, csrf: str, probe: Probe) -> int:
    """Send ``probe`` (from ``logged_in``, with its CSRF token, when it needs a login);
    the status. A stream is read to its first bytes, then closed."""
    client = logged_in if probe.logged_in else plain
    headers: dict[str, Any] = {k: v.encode("latin-1") for k, v in probe.headers.items()}
    if probe.logged_in and not probe.own_csrf:
        headers["x-csrf-token"] = csrf
    if probe.stream:
        with client.stream(probe.method, probe.path, headers=headers) as answer:
            next(answer.iter_bytes(), b"")
            return answer.status_code
    answer = client.request(probe.method, probe.path, headers=headers, content=probe.body)
    return answer.status_code
