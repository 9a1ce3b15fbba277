"""Shared test helpers: where the third-party conformance fixtures live, and how to skip without them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The folder ``../shared/fixtures`` (third-party outputs); tests that need it skip where it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"conformance fixtures not found at {SHARED_FIXTURES} (clone with ../shared beside the repo)")
    return SHARED_FIXTURES
