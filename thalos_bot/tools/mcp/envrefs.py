"""Resolve ``${NAME}`` references in a server's ``env`` and ``headers`` when it starts.

The resolved values are secrets: they go to the server process or into request headers
and nowhere else. Errors name the server, the key and the variable, never a value.
"""

from __future__ import annotations

from collections.abc import Mapping

from thalos_bot.config.tools import ENV_REFERENCE


class MissingVariableError(Exception):
    """A referenced environment variable is not set."""

    def __init__(self, server: str, key: str, variable: str) -> None:
        self.server = server
        self.key = key
        self.variable = variable
        super().__init__(f"{key} refers to the environment variable {variable}, which is not set")


def resolve_references(
    values: Mapping[str, str], environ: Mapping[str, str], *, server: str, section: str
) -> dict[str, str]:
    """``values`` with every ``${NAME}`` replaced by ``environ[NAME]``.

    Raises :class:`MissingVariableError` for the first variable that is not set.
    """
    resolved: dict[str, str] = {}
    for key, value in values.items():
        for match in ENV_REFERENCE.finditer(value):
            if match.group(1) not in environ:
                raise MissingVariableError(server, f"{section}.{key}", match.group(1))
        resolved[key] = ENV_REFERENCE.sub(lambda m: environ[m.group(1)], value)
    return resolved


def referenced_values(values: Mapping[str, str], environ: Mapping[str, str]) -> set[str]:
    """The values of every variable ``values`` refers to: secrets to keep out of logs."""
    return {
        environ[match.group(1)]
        for value in values.values()
        for match in ENV_REFERENCE.finditer(value)
        if match.group(1) in environ
    }


def scrub(text: str, secrets: set[str]) -> str:
    """``text`` with every secret of four or more characters replaced by ``[hidden]``."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "[hidden]")
    return text
