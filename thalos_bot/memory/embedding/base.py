"""What every embedder offers, and the one error they raise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
"""``(n, dimensions)`` float32, each row of unit length."""


class EmbedderError(Exception):
    """The embedder could not embed (unavailable, refused, timed out, malformed reply).

    Its text is for logs only and never carries a key or the embedded text."""


class Embedder(Protocol):
    @property
    def model(self) -> str:
        """Identifies the vector space: two embedders with the same ``model`` produce
        comparable vectors; vectors of different models are never mixed."""
        ...

    @property
    def dimensions(self) -> int: ...

    @property
    def available(self) -> bool:
        """False for the null embedder: recall is keyword-only and nothing is pending."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order. Raises :class:`EmbedderError`."""
        ...

    async def aclose(self) -> None: ...


def normalized(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbedderError(f"expected a matrix of vectors, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return result
