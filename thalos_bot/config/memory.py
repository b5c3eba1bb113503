"""``[memory]``: long-term memory for the whole host.

Per-agent auto-recall lives in ``agents[n].memory`` (enabled, top_k, min_score,
char_budget); this section holds what is the same for every agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

DEDUPE_THRESHOLD = 0.6
"""Jaccard over word 1+2-shingles at or above which a new memory restates an old one
(the default of ``dedupe_threshold``)."""
CONTAINMENT_THRESHOLD = 0.8
"""Share of the smaller memory's shingles found in the larger one at or above which one
says everything the other does (needs three or more content words in the smaller; the
default of ``containment_threshold``)."""


class EmbeddingSettings(BaseModel):
    """``[memory.embeddings]``: how recall finds memories by meaning."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["embedded", "local", "endpoint", "off"] = "embedded"
    """``embedded``: WordLlama, shipped inside its package, on the CPU, offline.
    ``local``: a sentence-transformers BERT model in the folder ``path`` (for example
    all-MiniLM-L6-v2), on the CPU, offline. ``endpoint``: an OpenAI-compatible
    ``/embeddings`` endpoint (``base_url``, ``model``, key in
    ``THALOS_EMBEDDINGS_API_KEY``). ``off``: keyword (BM25) recall only."""
    path: str | None = Field(None, min_length=1, max_length=4096)
    """``local`` mode: the model folder, an absolute path (``~`` is expanded)."""
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    """E.g. ``https://api.openai.com/v1`` (``/embeddings`` is appended)."""
    model: str | None = Field(None, min_length=1, max_length=200)
    dimensions: int | None = Field(None, ge=8, le=8192)
    """Ask the endpoint for vectors of this size (models that support it)."""
    timeout_seconds: float = Field(10.0, gt=0, le=120)
    dedupe_similarity: float = Field(0.95, ge=0.5, le=1.0)
    """Cosine similarity at or above which a new memory repeats an existing one of the
    same owner and agent scope (used besides the word resemblance)."""
    min_similarity: float = Field(0.15, ge=0.0, le=1.0)
    """A record found only by meaning must be at least this similar to the message."""

    @model_validator(mode="after")
    def _endpoint_needs_url_and_model(self) -> EmbeddingSettings:
        if self.mode == "endpoint" and (self.base_url is None or self.model is None):
            raise ValueError('mode = "endpoint" needs base_url and model')
        if self.mode == "local":
            if self.path is None:
                raise ValueError('mode = "local" needs path (a sentence-transformers folder)')
            from thalos_bot.memory.embedding.base import EmbedderError
            from thalos_bot.memory.embedding.local import check_folder

            try:
                check_folder(self.folder())
            except EmbedderError as exc:
                raise ValueError(f"path: {exc}") from None
        return self

    def folder(self) -> Path:
        """``path`` with ``~`` expanded (``local`` mode)."""
        folder = Path(self.path or "").expanduser()
        if not folder.is_absolute():
            raise ValueError(f"path: {self.path!r} is not an absolute path")
        return folder


class MemorySettings(BaseModel):
    """``[memory]``."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    tools: StrictBool = True
    """Offer the ``memory__*`` tools (remember, recall, forget, list). False hides them
    for every agent; auto-recall still works for agents that enable it."""
    shared_owner: str | None = Field(None, min_length=1, max_length=200, pattern=r"^\S+$")
    """An owner id whose records every caller recalls (project-wide knowledge). Tools
    never write or forget under it; the operator adds them with ``thalos-bot memory add
    --owner``. A caller whose own id equals it cannot use the memory tools to write."""
    shared_writes: StrictBool = False
    """People may file memories in the shared scope themselves (``shared_owner``: the
    ``remember`` tool's ``shared``, ``/remember shared …``) and list it. Off: only the
    operator adds to it. Everyone recalls it either way."""
    scope: Literal["owner", "agent"] = "owner"
    """Where the tools file a new memory: ``owner`` shares it across all of the caller's
    agents; ``agent`` keeps it with the agent that stored it. Recall, list, forget and
    auto-recall all see the same records: the caller's shared ones and the current
    agent's own, never another agent's."""
    dedupe_threshold: float = Field(DEDUPE_THRESHOLD, ge=0.3, le=1.0)
    """Jaccard resemblance (word 1+2-shingles) at or above which a new memory refreshes
    an existing one of the same owner instead of being stored again."""
    containment_threshold: float = Field(CONTAINMENT_THRESHOLD, ge=0.5, le=1.0)
    """Share of the smaller memory's shingles found in the larger one at or above which
    they are one memory (the fuller text is kept)."""
    page_size: int = Field(20, ge=1, le=100)
    """Records per page of ``memory__list``."""
    max_recall: int = Field(10, ge=1, le=50)
    """The most records one ``memory__recall`` call returns."""
    recall_char_budget: int = Field(6000, ge=200, le=50_000)
    """Characters of memory text one ``memory__recall`` call returns at most."""
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    """``[memory.embeddings]``."""

    @model_validator(mode="after")
    def _shared_writes_need_a_scope(self) -> MemorySettings:
        if self.shared_writes and self.shared_owner is None:
            raise ValueError(
                "shared_writes = true needs shared_owner: the owner id the shared "
                'memories are kept under (e.g. shared_owner = "household")'
            )
        return self
