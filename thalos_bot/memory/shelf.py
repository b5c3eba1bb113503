"""Vectors held in memory for one scope key (an owner and an agent), scanned with numpy.

Each vector is kept twice, compactly: as int8 codes (``round(v * 127)``, one byte per
dimension) for the exact cosine, and as sign bits (one bit per dimension) for a Hamming
prefilter. A search over a large shelf ranks every vector by Hamming distance (XOR and
popcount over 64-bit words), keeps the best :data:`PREFILTER` and rescores those with
the int8 codes; a small shelf is scored exactly. At 256 dimensions that is 288 bytes a
record (about 29 MB for 100,000), and a scan of 100,000 takes about 3 ms on one core.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from thalos_bot.memory.embedding.base import Vectors

PREFILTER = 512
"""Candidates the Hamming pass keeps for the exact rescore."""
EXACT_BELOW = 4096
"""Shelves this small are scored exactly (the prefilter would not save anything)."""
SCALE = 127.0

Codes = npt.NDArray[np.int8]
Bits = npt.NDArray[np.uint64]


def quantize(vectors: Vectors) -> Codes:
    """Unit float32 rows as int8 codes."""
    clipped = np.clip(np.rint(vectors * SCALE), -127, 127)
    codes: Codes = clipped.astype(np.int8)
    return codes


def sign_bits(codes: Codes) -> Bits:
    """One bit per dimension (positive or not), padded to whole 64-bit words."""
    rows, dims = codes.shape
    words = -(-dims // 64)
    packed = np.packbits(codes > 0, axis=1)
    padded = np.zeros((rows, words * 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    bits: Bits = padded.view(np.uint64)
    return bits


class Shelf:
    """A growable set of ``(seq, codes)``; removal swaps the last row into the gap."""

    def __init__(self, dimensions: int, capacity: int = 64) -> None:
        self.dimensions = dimensions
        self._size = 0
        self._seqs = np.zeros(capacity, dtype=np.int64)
        self._codes: Codes = np.zeros((capacity, dimensions), dtype=np.int8)
        self._bits: Bits = np.zeros((capacity, -(-dimensions // 64)), dtype=np.uint64)
        self._row_of: dict[int, int] = {}

    def __len__(self) -> int:
        return self._size

    def __contains__(self, seq: int) -> bool:
        return seq in self._row_of

    @property
    def nbytes(self) -> int:
        return int(self._seqs.nbytes + self._codes.nbytes + self._bits.nbytes)

    def put(self, seqs: npt.NDArray[np.int64], codes: Codes) -> None:
        """Add or replace rows."""
        bits = sign_bits(codes)
        for i, seq in enumerate(seqs.tolist()):
            row = self._row_of.get(seq)
            if row is None:
                self._grow(self._size + 1)
                row = self._size
                self._size += 1
                self._row_of[seq] = row
                self._seqs[row] = seq
            self._codes[row] = codes[i]
            self._bits[row] = bits[i]

    def remove(self, seq: int) -> bool:
        row = self._row_of.pop(seq, None)
        if row is None:
            return False
        last = self._size - 1
        if row != last:
            moved = int(self._seqs[last])
            self._seqs[row] = moved
            self._codes[row] = self._codes[last]
            self._bits[row] = self._bits[last]
            self._row_of[moved] = row
        self._codes[last] = 0
        self._size = last
        return True

    def search(self, query: Vectors, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` ``(seq, cosine)`` pairs, most similar first."""
        size = self._size
        if size == 0 or limit <= 0:
            return []
        vector = query.reshape(-1).astype(np.float32, copy=False)
        if size <= EXACT_BELOW:
            rows = np.arange(size)
        else:
            query_bits = sign_bits(quantize(vector.reshape(1, -1)))[0]
            distance = np.bitwise_count(self._bits[:size] ^ query_bits).sum(axis=1, dtype=np.uint32)
            rows = np.argpartition(distance, PREFILTER)[:PREFILTER]
        scores = (self._codes[rows].astype(np.float32) @ vector) / SCALE
        keep = min(limit, len(rows))
        best = np.argpartition(-scores, keep - 1)[:keep] if keep < len(rows) else np.arange(keep)
        ordered = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self._seqs[rows[i]]), float(scores[i])) for i in ordered]

    def _grow(self, needed: int) -> None:
        capacity = len(self._seqs)
        if needed <= capacity:
            return
        capacity = max(needed, capacity * 2)
        seqs = np.zeros(capacity, dtype=np.int64)
        seqs[: self._size] = self._seqs[: self._size]
        codes: Codes = np.zeros((capacity, self.dimensions), dtype=np.int8)
        codes[: self._size] = self._codes[: self._size]
        bits: Bits = np.zeros((capacity, self._bits.shape[1]), dtype=np.uint64)
        bits[: self._size] = self._bits[: self._size]
        self._seqs, self._codes, self._bits = seqs, codes, bits
