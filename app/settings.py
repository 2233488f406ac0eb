"""Every setting, with its default and a one-line help; overridable as DEPTHCARDS_<NAME>."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_DIR = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DEPTHCARDS_", extra="ignore")

    data_dir: Path = Field(PROJECT_DIR / "data", description="Folder for the SQLite database and other user data.")
    cards_dir: Path = Field(PROJECT_DIR / "cards", description="Folder of markdown cards to load.")
    host: str = Field("127.0.0.1", description="Address `depthcards serve` listens on.")
    port: int = Field(8000, ge=1, le=65535, description="Port `depthcards serve` listens on.")
    log_level: str = Field("info", description="Log level of the server (debug, info, warning, error).")

    @property
    def db_path(self) -> Path:
        return self.data_dir / "depthcards.sqlite3"


def describe_settings() -> list[tuple[str, str, str]]:
    """(environment variable, default, help) for each setting: used by the docs and `depthcards settings`."""
    rows = []
    for name, info in Settings.model_fields.items():
        default = info.default
        if isinstance(default, Path):
            default = default.relative_to(PROJECT_DIR) if default.is_relative_to(PROJECT_DIR) else default
        rows.append((f"DEPTHCARDS_{name.upper()}", str(default), info.description or ""))
    return rows
