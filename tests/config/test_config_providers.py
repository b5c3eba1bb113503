"""``[[providers]]``, per-agent ``provider`` / ``model`` / ``fallback``, and today's
``[provider]`` as the provider ``default``: what each agent resolves to, and the errors
that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.openai_api import OpenAIFake
from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.config.models import Settings, build_catalog


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path).settings


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return caught.value.problems


LOCAL = """
[[providers]]
id = "local"
kind = "openai"
model = "qwen3:8b"
base_url = "http://127.0.0.1:11434/v1"
"""


def test_the_old_provider_table_is_the_provider_default(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        '[provider]\nmodel = "claude-x"\ncontext_window = 150000\n'
        '[[agents]]\nid = "a"\nname = "A"\n',
    )
    route = settings.route(settings.agents[0])
    assert route.primary.id == "default"
    assert route.primary.kind == "anthropic"
    assert route.model == "claude-x"
    assert route.primary.context_window == 150_000
    assert route.primary.key_env == "ANTHROPIC_API_KEY"
    assert route.fallback == ()


def test_an_agent_picks_a_provider_overrides_its_model_and_names_a_fallback(
    tmp_path: Path,
) -> None:
    settings = load(
        tmp_path,
        LOCAL + '[[providers]]\nid = "router"\nkind = "openai"\nmodel = "meta/llama"\n'
        'base_url = "https://openrouter.ai/api/v1"\napi_key_env = "OPENROUTER_API_KEY"\n'
        "max_output_tokens = 1000\n"
        '[[agents]]\nid = "a"\nname = "A"\nprovider = "local"\nmodel = "qwen3:32b"\n'
        'fallback = ["router", "default"]\n'
        '[[agents]]\nid = "b"\nname = "B"\n',
    )
    first = settings.route(settings.agents[0])
    assert first.primary.id == "local"
    assert first.model == "qwen3:32b"
    assert first.primary.context_window is None  # unknown: asked of the server
    assert first.primary.key_env is None  # a local server needs no key
    assert [spec.id for spec in first.fallback] == ["router", "default"]
    assert first.fallback[0].key_env == "OPENROUTER_API_KEY"
    assert first.describe() == (
        "local (qwen3:32b) → router (meta/llama) → default (claude-sonnet-5-5)"
    )
    catalog = build_catalog(settings)
    assert catalog.get("a").model == "qwen3:32b"
    assert catalog.get("b").model == "claude-sonnet-5-5"
    assert settings.route(settings.agents[1]).primary.id == "default"


def test_a_providers_entry_may_be_the_default(tmp_path: Path) -> None:
    settings = load(tmp_path, LOCAL.replace('"local"', '"default"'))
    route = settings.route(settings.agents[0])
    assert route.primary.kind == "openai"
    assert route.model == "qwen3:8b"


def test_an_unknown_provider_id_names_the_key(tmp_path: Path) -> None:
    found = problems(tmp_path, LOCAL + '[[agents]]\nid = "a"\nname = "A"\nprovider = "lokal"\n')
    assert found == [
        "bot.toml: agents[0].provider: 'lokal' is not a provider id (providers: default, local)"
    ]
    found = problems(tmp_path, LOCAL + '[[agents]]\nid = "a"\nname = "A"\nfallback = ["x"]\n')
    assert found == [
        "bot.toml: agents[0].fallback[0]: 'x' is not a provider id (providers: default, local)"
    ]


def test_a_fallback_cycle_is_an_error(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        LOCAL + '[[agents]]\nid = "a"\nname = "A"\nprovider = "local"\n'
        'fallback = ["default", "local"]\n',
    )
    cycle = (
        "bot.toml: agents[0].fallback[1]: 'local' is already in the chain "
        "(local → default → local): a fallback cycle"
    )
    assert found == [cycle]


def test_a_kind_that_lacks_a_required_key_names_it(tmp_path: Path) -> None:
    found = problems(tmp_path, '[[providers]]\nid = "local"\nkind = "openai"\n')
    assert found == [
        'bot.toml: providers[0].model: required for kind "openai" (the server\'s model name)'
    ]
    found = problems(tmp_path, '[provider]\nkind = "openai"\n')
    assert found == [
        'bot.toml: provider.model: required for kind "openai" (the server\'s model name)'
    ]
    found = problems(tmp_path, '[[providers]]\nkind = "openai"\nmodel = "m"\n')
    assert found == ["bot.toml: providers[0].id: required"]


def test_duplicate_ids_and_a_doubled_default_are_errors(tmp_path: Path) -> None:
    assert problems(tmp_path, LOCAL + LOCAL) == [
        "bot.toml: providers[1].id: 'local' is already used by providers[0]"
    ]
    doubled = '[provider]\nmodel = "claude-x"\n' + LOCAL.replace('"local"', '"default"')
    twice = (
        "bot.toml: provider.model: providers[0] is the provider 'default'; give its keys "
        "there, not in [provider]"
    )
    assert problems(tmp_path, doubled) == [twice]


def test_a_key_variable_name_must_be_a_name(tmp_path: Path) -> None:
    found = problems(tmp_path, LOCAL + 'api_key_env = "sk-123 secret"\n')
    assert len(found) == 1
    assert found[0].startswith("bot.toml: providers[0].api_key_env: does not match")


def test_check_names_each_provider_whether_it_answers_and_agents_without_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIFake() as fake:
        path = tmp_path / "bot.toml"
        path.write_text(
            f'[[providers]]\nid = "local"\nkind = "openai"\nmodel = "qwen3:8b"\n'
            f'base_url = "{fake.base_url}"\ntools = false\n'
            '[[providers]]\nid = "gone"\nkind = "openai"\nmodel = "m"\n'
            'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "GONE_KEY"\n'
            '[[agents]]\nid = "a"\nname = "A"\nprovider = "local"\nfallback = ["gone"]\n',
            encoding="utf-8",
        )
        assert main(["check", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    local = (
        "  local: openai, model qwen3:8b, max 4096 output tokens, no key, context window "
        f"asked of the server, {fake.base_url} reachable, no tool calling"
    )
    assert local in out
    assert (
        "  gone: openai, model m, max 4096 output tokens, key from GONE_KEY (not set: GONE_KEY)"
        in out
    )
    assert "http://127.0.0.1:9/v1 NOT reachable" in out
    assert "  a: local (qwen3:8b) → gone (m)" in out
    assert "note: a's tools are not offered: provider 'local' has no tool calling" in out
    assert "default:" not in out, "a provider no agent uses is not listed"


def test_the_readme_provider_examples_are_a_valid_configuration(tmp_path: Path) -> None:
    page = Path(__file__).parents[2] / "docs" / "configuration.md"
    section = page.read_text(encoding="utf-8")
    section = section[section.index("## Model providers") :]
    example = section[section.index("```toml\n") + 8 : section.index("```\n", 8)]
    settings = load(tmp_path, example)
    chains = {a.id: settings.route(a).describe() for a in settings.agents}
    assert chains == {
        "assistant": "claude (claude-sonnet-5-5) → openrouter (meta-llama/llama-4-maverick)"
        " → ollama (qwen3:8b)",
        "private": "ollama (qwen3:32b)",
    }
