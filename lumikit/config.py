"""The user's own settings (account, reservation, site): never in code, never in the site profile.

Read from ``$LUMIKIT_CONFIG`` or ``~/.config/lumikit/config.toml``; ``LUMIKIT_ACCOUNT``,
``LUMIKIT_RESERVATION`` and ``LUMIKIT_SITE`` override the file.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import SiteError


@dataclass(frozen=True)
class UserConfig:
    account: str | None = None
    reservation: str | None = None
    site: str | None = None
    source: str | None = None


def config_path() -> Path:
    env = os.environ.get("LUMIKIT_CONFIG")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "lumikit" / "config.toml"


def load_config() -> UserConfig:
    """The merged user configuration (environment over file)."""
    path = config_path()
    data: dict[str, object] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise SiteError(f"{path}: not valid TOML ({exc}); fix or delete the file") from None
    def pick(key: str) -> str | None:
        value = os.environ.get(f"LUMIKIT_{key.upper()}") or data.get(key)
        return str(value) if value else None
    return UserConfig(account=pick("account"), reservation=pick("reservation"), site=pick("site"),
                      source=str(path) if path.exists() else None)
