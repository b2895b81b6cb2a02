"""Deterministic hashing embedder: fast, dependency-free, for tests and tiny deployments.

Features are lower-cased word unigrams, word bigrams and character trigrams, hashed (blake2b) into
``dimensions`` signed buckets and L2-normalised. Texts that share words are similar; it knows no
synonyms, so use the local model for semantic search.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from .base import Embedder, Matrix, normalize_rows

_WORD = re.compile(r"[\w']+", re.UNICODE)


class HashingEmbedder(Embedder):
    def __init__(self, dimensions: int = 384) -> None:
        if dimensions < 8:
            raise ValueError("dimensions must be >= 8")
        self.dimensions = dimensions
        self.model_id = f"hashing-v1-{dimensions}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        feats += [("b:" + a + " " + b, 0.7) for a, b in pairwise(words)]
        for w in words:
            padded = f"#{w}#"
            feats += [("c:" + padded[i : i + 3], 0.3) for i in range(max(1, len(padded) - 2))]
        return feats

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, weight in self._features(text):
                digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                out[row, h % self.dimensions] += weight if (h >> 63) & 1 else -weight
        return normalize_rows(out)
