"""Write the reference vectors the ONNX embedder is checked against (needs sentence-transformers + torch).

Run once where the ``sentence-transformers`` extra is installed::

    PYTHONPATH=src python3 scripts/make_minilm_reference.py

It embeds ``REFERENCE_TEXTS`` with sentence-transformers' all-MiniLM-L6-v2 (the bundled weights) and
saves texts and float32 vectors to ``tests/fixtures/minilm_reference.npz``, so the comparison test
runs on machines without torch. Four of them (``PACKAGED``) also go to
``src/stratamem/embeddings/minilm_check.npz``, which ``stratamem models install`` checks a freshly built
model against.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stratamem.embeddings.local import SentenceTransformerEmbedder

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "minilm_reference.npz"
PACKAGED_OUT = ROOT / "src" / "stratamem" / "embeddings" / "minilm_check.npz"
#: Short, accented, over 256 tokens (truncated), CJK: the texts the installed model is verified on.
PACKAGED = [0, 4, 5, 9]

REFERENCE_TEXTS = [
    "User prefers dark mode",
    "what color theme does the user like",
    "x",
    "",
    "Grüße aus München, 2023 — naïve café ☕",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. " * 40,  # > 256 tokens
    "The deployment to eu-west-1 failed at 03:14 because the TLS certificate had expired.",
    "Melanie painted a sunrise over the lake last summer and gave it to her sister.",
    "SELECT * FROM memories WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 10;",
    "我喜欢在周末去公园散步。",
    "Remind me to call the dentist on Tuesday at 9am.",
    "The quick brown fox jumps over the lazy dog.",
    "agent-7 stored a note: budget approved for Q3, pending legal review",
    "   leading and trailing whitespace   ",
    "UPPER CASE SHOUTING ABOUT THE WEATHER",
    "emoji only 🎉🎉🎉",
]


def main() -> None:
    vectors = SentenceTransformerEmbedder().embed(REFERENCE_TEXTS)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, texts=np.asarray(REFERENCE_TEXTS), vectors=vectors.astype(np.float32))
    texts = np.asarray(REFERENCE_TEXTS)
    np.savez_compressed(PACKAGED_OUT, texts=texts[PACKAGED], vectors=vectors[PACKAGED].astype(np.float32))
    print(f"wrote {len(REFERENCE_TEXTS)} reference vectors to {OUT}, {len(PACKAGED)} of them to {PACKAGED_OUT}")


if __name__ == "__main__":
    main()
