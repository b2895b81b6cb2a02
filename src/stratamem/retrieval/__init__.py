"""Retrieval quality and speed: lexical (BM25) matching fused with dense similarity."""

from .lexical import BM25_B, BM25_K1, fuse_scores, query_terms, term_counts, tokenize

__all__ = ["BM25_B", "BM25_K1", "fuse_scores", "query_terms", "term_counts", "tokenize"]
