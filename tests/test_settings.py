"""One settings model reads every ``STRATAMEM_*`` variable, and the documented table matches it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stratamem.settings import ServerSettings, Settings, env_names, env_table

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"STRATAMEM_[A-Z0-9_]*[A-Z0-9]")
#: Prefix-only mentions in prose (``STRATAMEM_*``) are not variables.
_PROSE = {"STRATAMEM_"}


def _names_in_src() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src" / "stratamem").rglob("*.py"):
        names.update(NAME.findall(path.read_text(encoding="utf-8")))
    return names - _PROSE


def _documented_table() -> str:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start, end = "<!-- settings-table:start -->\n", "<!-- settings-table:end -->"
    return text[text.index(start) + len(start) : text.index(end)].strip() + "\n"


def test_every_variable_in_src_is_a_settings_field() -> None:
    names = _names_in_src()
    assert len(names) > 20  # the source was read
    assert sorted(names - set(env_names())) == []


def test_the_documented_table_is_the_generated_one() -> None:
    assert _documented_table() == env_table(), "regenerate with: python -m stratamem.settings"
    for name in env_names():
        assert f"`{name}`" in _documented_table()


def test_no_module_but_settings_reads_a_stratamem_variable_from_the_environment() -> None:
    reads = re.compile(r"(os\.environ|getenv)[^\n]*STRATAMEM_")
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "src" / "stratamem").rglob("*.py")
        if p.name != "settings.py" and reads.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_values_come_from_the_environment_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATAMEM_DB", "memory://")
    monkeypatch.setenv("STRATAMEM_CONTENTION_ALERT_THRESHOLD", "7")
    monkeypatch.setenv("STRATAMEM_PORT", "9001")
    settings = Settings()
    assert settings.store_location() == "memory://"
    assert settings.contention_alert_threshold == 7
    assert ServerSettings().port == 9001
    assert ServerSettings(port=9002).port == 9002  # an explicit argument wins


def test_secrets_stay_out_of_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATAMEM_KEY_PEPPER", "pepper-value")
    monkeypatch.setenv("STRATAMEM_LLM_API_KEY", "llm-secret")
    text = repr(ServerSettings(jwt_secret="jwt-secret", metrics_token="metrics-secret"))
    for secret in ("pepper-value", "llm-secret", "jwt-secret", "metrics-secret"):
        assert secret not in text
