"""The offline default does not import the HTTP client of the OpenAI-compatible backends."""

from __future__ import annotations

import subprocess
import sys


def test_opening_a_store_offline_does_not_import_httpx() -> None:
    code = (
        "import sys\n"
        "from stratamem import Memory, TenantContext\n"
        "with Memory.open(':memory:', embedder='hashing') as mem:\n"
        "    mem.add(TenantContext(tenant_id='acme'), 'the user likes tea', layer='user',"
        " identifiers={'user_id': 'u1'})\n"
        "print('httpx' in sys.modules)\n"
        "from stratamem.llm import OpenAIChatLLM\n"  # still importable by name, on first use
        "print(OpenAIChatLLM.__name__, 'httpx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "OpenAIChatLLM", "True"]
