"""``thalos-bot doctor``'s provider checks: each ``[[providers]]`` entry an agent uses is
asked for one token (its key named when it is missing or refused, its context window
said: configured, published by the server, or unknown). The ``[provider]`` table keeps
its own check ("Anthropic endpoint answers")."""

from __future__ import annotations

import os
import time
from contextlib import aclosing

import anyio

from thalos_bot.channels.checks import Check
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.providers import DEFAULT_PROVIDER, ProviderSpec
from thalos_bot.domain.messages import Message
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.providers.base import ModelRequest, ProviderError
from thalos_bot.providers.factory import build_from_spec

PROVIDER_CHECK_TIMEOUT = 30.0


def provider_env(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """``(variable, who needs it)`` for each key a used provider reads."""
    return [
        (spec.key_env, f"provider {spec.id}")
        for spec in loaded.settings.used_provider_specs()
        if spec.key_env is not None and not _anthropic_default(spec)
    ]


def uses_default(loaded: LoadedConfig) -> bool:
    return any(spec.id == DEFAULT_PROVIDER for spec in loaded.settings.used_provider_specs())


async def provider_checks(loaded: LoadedConfig, *, offline: bool) -> list[Check]:
    return [
        await _one(spec, offline=offline)
        for spec in loaded.settings.used_provider_specs()
        if not _anthropic_default(spec)
    ]


def _anthropic_default(spec: ProviderSpec) -> bool:
    """``[provider]`` as Anthropic: the doctor's "Anthropic endpoint answers" checks it."""
    return spec.id == DEFAULT_PROVIDER and spec.kind == "anthropic"


async def _window(spec: ProviderSpec, provider: object) -> str:
    if spec.context_window is not None:
        return f"context window {spec.context_window:,} (configured)"
    from thalos_bot.providers.openai import OpenAIProvider

    if isinstance(provider, OpenAIProvider):
        found = await provider.context_window(spec.model)
        if found is None:
            return "context window unknown (the server does not say; set context_window)"
        return f"context window {found:,} (from the server)"
    return "context window 200,000"


async def _one(spec: ProviderSpec, *, offline: bool) -> Check:
    name = f"provider {spec.id} ({spec.kind}, {spec.model}) answers"
    if spec.kind == "scripted":
        return Check(name, "skip", "scripted: answers offline")
    if offline:
        return Check(name, "skip", "--offline")
    if spec.key_env is not None and not os.environ.get(spec.key_env):
        return Check(name, "skip", f"{spec.key_env} is not set")
    provider = build_from_spec(spec)
    request = ModelRequest(
        model=spec.model,
        max_output_tokens=1,
        system=[SystemPart("Reply with one word.")],
        messages=[Message.user("ping")],
    )
    started = time.monotonic()
    try:
        with anyio.fail_after(PROVIDER_CHECK_TIMEOUT):
            async with aclosing(provider.stream(request)) as events:
                async for _event in events:
                    pass
            window = await _window(spec, provider)
    except ProviderError as exc:
        return Check(name, "fail", exc.user_message)
    except TimeoutError:
        return Check(name, "fail", f"no answer within {PROVIDER_CHECK_TIMEOUT:.0f}s")
    finally:
        await provider.aclose()
    elapsed = time.monotonic() - started
    return Check(name, "ok", f"answered in {elapsed:.1f}s at {spec.endpoint}; {window}")
