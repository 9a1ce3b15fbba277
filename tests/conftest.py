"""Shared test helpers: where the third-party conformance fixtures live, and how to skip without them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the developer's own ~/.config/lumikit or LUMIKIT_* settings."""
    monkeypatch.setenv("LUMIKIT_CONFIG", str(tmp_path_factory.getbasetemp() / "no-such-config.toml"))
    for name in ("LUMIKIT_ACCOUNT", "LUMIKIT_RESERVATION", "LUMIKIT_SITE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The folder ``../shared/fixtures`` (third-party outputs); tests that need it skip where it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"conformance fixtures not found at {SHARED_FIXTURES} (clone with ../shared beside the repo)")
    return SHARED_FIXTURES
