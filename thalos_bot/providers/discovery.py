"""Asking an OpenAI-compatible server for a model's context window.

Servers publish it in different places, and the Chat Completions API has none:

* vLLM: ``max_model_len`` of the model's entry in ``GET /v1/models`` (OpenRouter:
  ``context_length`` there);
* llama.cpp: ``default_generation_settings.n_ctx`` in ``GET /props`` (the window the
  server was started with, ``-c``);
* Ollama: ``POST /api/show`` — ``num_ctx`` in the model's ``parameters`` when set (what
  the server runs it with), else ``<architecture>.context_length`` in ``model_info``.

Each probe is tried once, in that order, with a short timeout; any failure (404, not
JSON, unreachable) moves to the next. None means unknown: the caller must not guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
import structlog

log = structlog.get_logger(__name__)

PROBE_TIMEOUT_S = 5.0
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def _root(base_url: str) -> str:
    """``http://host:11434/v1`` → ``http://host:11434``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_models(payload: Any, model: str) -> int | None:
    data = payload.get("data") if isinstance(payload, Mapping) else None
    for entry in data if isinstance(data, list) else ():
        if isinstance(entry, Mapping) and entry.get("id") == model:
            return _positive(entry.get("max_model_len")) or _positive(entry.get("context_length"))
    return None


def from_props(payload: Any) -> int | None:
    if not isinstance(payload, Mapping):
        return None
    settings = payload.get("default_generation_settings")
    if isinstance(settings, Mapping) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(payload.get("n_ctx"))


def from_show(payload: Any) -> int | None:
    if not isinstance(payload, Mapping):
        return None
    parameters = payload.get("parameters")
    if isinstance(parameters, str):
        match = _NUM_CTX.search(parameters)
        if match:
            return int(match.group(1))
    info = payload.get("model_info")
    if not isinstance(info, Mapping):
        return None
    arch = info.get("general.architecture")
    if isinstance(arch, str):
        return _positive(info.get(f"{arch}.context_length"))
    return None


async def discover_window(base_url: str, model: str) -> int | None:
    """The context window the server at ``base_url`` publishes for ``model``, or None."""
    root = _root(base_url)
    async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S) as client:
        probes: tuple[tuple[str, str, Any, Callable[[Any], int | None]], ...] = (
            ("GET", f"{base_url.rstrip('/')}/models", None, lambda p: from_models(p, model)),
            ("GET", f"{root}/props", None, from_props),
            ("POST", f"{root}/api/show", {"model": model}, from_show),
        )
        for method, url, payload, read in probes:
            try:
                response = await client.request(method, url, json=payload)
                if response.status_code != 200:
                    continue
                found = read(response.json())
            except (httpx2.HTTPError, ValueError) as err:
                log.debug("context_window_probe_failed", url=url, error_type=type(err).__name__)
                continue
            if found is not None:
                return found
    return None
