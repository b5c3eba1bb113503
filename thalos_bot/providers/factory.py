"""Build the configured model providers. Secrets come from the environment only."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from thalos_bot.config.models import ProviderSettings, Settings
from thalos_bot.config.providers import ProviderSpec
from thalos_bot.providers.base import ModelProvider, ModelRequest
from thalos_bot.providers.fallback import FallbackProvider, Member
from thalos_bot.providers.routing import FixedWindow, ProviderRoute, WindowSource
from thalos_bot.providers.scripted import Reply, ScriptedProvider, echo_reply

API_KEY_ENV = "ANTHROPIC_API_KEY"
DEMO_WORD_DELAY = 0.03
ANTHROPIC_WINDOW = 200_000
"""Every current Claude model's window, used when ``context_window`` is left out."""


def _paced_echo(request: ModelRequest) -> Reply:
    return echo_reply(request, delay=DEMO_WORD_DELAY)


def build_from_spec(spec: ProviderSpec) -> ModelProvider:
    """One provider, its key read from the environment variable the spec names."""
    key = os.environ.get(spec.key_env) if spec.key_env else None
    if spec.kind == "scripted":
        return ScriptedProvider(default=_paced_echo)
    if spec.kind == "openai":
        from thalos_bot.providers.openai import OpenAIProvider

        return OpenAIProvider(
            label=spec.id,
            base_url=spec.base_url,
            api_key=key or None,
            key_env=spec.api_key_env,
            timeout=spec.timeout,
            max_retries=spec.max_retries,
            vision=spec.vision,
            tools=spec.tools,
            context_window=spec.context_window,
        )
    from thalos_bot.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        api_key=key or None,
        base_url=spec.base_url,
        timeout=spec.timeout,
        max_retries=spec.max_retries,
        prompt_caching=spec.prompt_caching,
    )


def build_provider(settings: ProviderSettings) -> ModelProvider:
    """The ``[provider]`` table's provider (the one with id ``default``)."""
    return build_from_spec(settings.spec())


def _windows(spec: ProviderSpec, provider: ModelProvider) -> WindowSource:
    if spec.kind == "openai":
        from thalos_bot.providers.openai import OpenAIProvider

        if isinstance(provider, OpenAIProvider):
            return provider
    return FixedWindow(spec.context_window or ANTHROPIC_WINDOW)


@dataclass(slots=True)
class Routes:
    """Every configured provider built once, and each agent's route over them."""

    providers: dict[str, ModelProvider] = field(default_factory=dict)
    """By provider id: the ones to close at shutdown."""
    by_agent: dict[str, ProviderRoute] = field(default_factory=dict)

    async def aclose(self) -> None:
        for provider in self.providers.values():
            await provider.aclose()


def build_routes(
    settings: Settings, wrap: Callable[[ModelProvider], ModelProvider] | None = None
) -> Routes:
    """A provider per id that some agent uses (wrapped by ``wrap``, e.g. for tracing),
    and each agent's route: its provider, or a fallback chain."""
    routes = Routes()
    raw: dict[str, ModelProvider] = {}

    def provider(spec: ProviderSpec) -> ModelProvider:
        if spec.id not in routes.providers:
            built = build_from_spec(spec)
            raw[spec.id] = built
            routes.providers[spec.id] = wrap(built) if wrap is not None else built
        return routes.providers[spec.id]

    for agent in settings.agents:
        route = settings.route(agent)
        first = provider(route.primary)
        chosen: ModelProvider = first
        if route.fallback:
            members = [Member(route.primary.id, first, route.model, route.max_output_tokens)]
            members += [
                Member(spec.id, provider(spec), spec.model, spec.max_output_tokens)
                for spec in route.fallback
            ]
            chosen = FallbackProvider(members)
        routes.by_agent[agent.id] = ProviderRoute(
            chosen,
            _windows(route.primary, raw[route.primary.id]),
            offers_tools=route.primary.tools,
        )
    return routes
