"""Build the configured model provider. Secrets come from the environment only."""

from __future__ import annotations

import os

from thalos_bot.config.models import ProviderSettings
from thalos_bot.providers.base import ModelProvider, ModelRequest
from thalos_bot.providers.scripted import Reply, ScriptedProvider, echo_reply

API_KEY_ENV = "ANTHROPIC_API_KEY"
DEMO_WORD_DELAY = 0.03


def _paced_echo(request: ModelRequest) -> Reply:
    return echo_reply(request, delay=DEMO_WORD_DELAY)


def build_provider(settings: ProviderSettings) -> ModelProvider:
    if settings.kind == "scripted":
        return ScriptedProvider(default=_paced_echo)
    from thalos_bot.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        api_key=os.environ.get(API_KEY_ENV) or None,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        prompt_caching=settings.prompt_caching,
    )
