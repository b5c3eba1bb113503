"""``[limits]`` in bot.toml: the tool-round limit under its new and old name, the price
table with its defaults, and errors that name the file and the key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.models import Settings
from thalos_bot.domain.events import TokenUsage


def settings(raw: Mapping[str, Any]) -> Settings:
    return validate(Settings, raw, "bot.toml")


def problems(raw: Mapping[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as error:
        settings(raw)
    return error.value.problems


def test_turn_tool_rounds_is_read_under_its_new_and_its_old_name() -> None:
    assert settings({}).limits.turn_tool_rounds == 8
    assert settings({"limits": {"turn_tool_rounds": 3}}).limits.turn_tool_rounds == 3
    assert settings({"provider": {"max_tool_rounds": 5}}).limits.turn_tool_rounds == 5
    same = {"provider": {"max_tool_rounds": 4}, "limits": {"turn_tool_rounds": 4}}
    assert settings(same).limits.turn_tool_rounds == 4
    assert problems({"provider": {"max_tool_rounds": 4}, "limits": {"turn_tool_rounds": 6}}) == [
        (
            "bot.toml: limits.turn_tool_rounds: differs from provider.max_tool_rounds (its old "
            "name); keep only limits.turn_tool_rounds"
        )
    ]
    assert problems({"limits": {"turn_tool_rounds": 0}})[0].startswith(
        "bot.toml: limits.turn_tool_rounds:"
    )


def test_the_default_prices_cover_the_default_model_and_dated_ids() -> None:
    table = settings({}).limits.price_table()
    assert table.price_of(settings({}).provider.model) is not None
    sonnet = table.cost("claude-sonnet-5-5-20260601", TokenUsage(1_000_000, 1_000_000))
    assert sonnet == pytest.approx(12.0)
    opus = table.cost("claude-opus-5-5", TokenUsage(0, 0, 1_000_000, 1_000_000))
    assert opus == pytest.approx(0.2 + 5.0)
    assert table.cost("gpt-5", TokenUsage(1, 1)) is None


def test_the_scripted_provider_costs_nothing_whatever_its_model_is_called() -> None:
    usage = TokenUsage(1_000_000, 1_000_000)
    scripted = settings({"provider": {"kind": "scripted", "model": "claude-sonnet-5-5"}})
    assert scripted.price_table().cost("claude-sonnet-5-5", usage) == 0
    real = settings({"provider": {"model": "claude-sonnet-5-5"}})
    assert real.price_table().cost("claude-sonnet-5-5", usage) == pytest.approx(12.0)
    priced = settings(
        {
            "provider": {"kind": "scripted", "model": "claude-sonnet-5-5"},
            "limits": {"prices": {"claude-sonnet-5-5": {"input": 1.0, "output": 1.0}}},
        }
    )
    assert priced.price_table().cost("claude-sonnet-5-5", usage) == pytest.approx(2.0)


def test_a_configured_price_overrides_or_adds_with_cache_defaults() -> None:
    raw = {"limits": {"prices": {"my-model": {"input": 2.0, "output": 8.0}}}}
    table = settings(raw).limits.price_table()
    assert table.cost("my-model", TokenUsage(0, 0, 1_000_000, 1_000_000)) == pytest.approx(
        0.2 + 2.5
    )


def test_limit_errors_name_the_file_and_the_key() -> None:
    assert problems({"limits": {"daily_cost_usd": 5}, "provider": {"model": "local-llm"}}) == [
        (
            "bot.toml: limits.daily_cost_usd: the model 'local-llm' has no price; add "
            '[limits.prices."local-llm"] with input and output (USD per million tokens)'
        )
    ]
    assert problems({"limits": {"timezone": "Mars/Olympus"}}) == [
        (
            "bot.toml: limits.timezone: 'Mars/Olympus' is not a time zone name "
            "(e.g. UTC, Europe/Berlin)"
        )
    ]
    assert problems({"limits": {"session_tokens": 0}})[0].startswith(
        "bot.toml: limits.session_tokens:"
    )
    assert problems({"limits": {"prices": {"m": {"input": 1}}}}) == [
        "bot.toml: limits.prices.m.output: required"
    ]
    assert problems({"limits": {"daily_token": 5}}) == [
        "bot.toml: limits.daily_token: unknown key (did you mean 'daily_tokens'?)"
    ]
