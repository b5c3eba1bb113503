"""The agents the Telegram tests talk to, on their own: a replica process
(:mod:`tests.cluster.replica_main`) loads them without the harness and its fakes."""

from __future__ import annotations

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId

CATALOG = AgentCatalog(
    [
        AgentDefinition(AgentId("helper"), "Helper", "Helps with anything.", "You help."),
        AgentDefinition(AgentId("coder"), "Coder", "Writes code.", "You code."),
    ]
)
