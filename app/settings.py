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

    # Challenges and the playground: the sandbox and its job queue (app/challenges).
    sandbox_wall_s: float = Field(5.0, gt=0, le=120, description="Wall-clock limit of one sandboxed run, in seconds.")
    sandbox_cpu_s: int = Field(5, ge=1, le=120, description="CPU-time limit of one sandboxed run, in seconds.")
    sandbox_mem_mb: int = Field(1024, ge=64, le=65536, description="Memory one sandboxed run may add on top of the warm server, in MiB.")
    sandbox_max_concurrent: int = Field(
        0, ge=0, le=256, description="Sandboxed runs at once, and worker threads that run queued jobs (0 = one per CPU core)."
    )
    sandbox_allow_unisolated: bool = Field(
        False, description="Run submissions WITHOUT isolation when bubblewrap is unavailable; single-user machines only."
    )
    sandbox_bwrap: str = Field("", description="Path of the bubblewrap binary (empty = find bwrap on PATH).")
    queue_size: int = Field(64, ge=1, le=100_000, description="Jobs (runs and submissions) that may wait for a worker; more get HTTP 429.")
    per_user_in_flight: int = Field(
        4, ge=1, le=1000, description="Jobs one user may have queued or running at once, so one user cannot starve the rest."
    )

    @property
    def db_path(self) -> Path:
        return self.data_dir / "depthcards.sqlite3"


def settings_with(**overrides: object) -> Settings:
    """Settings from the environment, with the command-line options that were given (None: not given)."""
    return Settings(**{key: value for key, value in overrides.items() if value is not None})  # type: ignore[arg-type]


def describe_settings() -> list[tuple[str, str, str]]:
    """(environment variable, default, help) for each setting: used by the docs and `depthcards settings`."""
    rows = []
    for name, info in Settings.model_fields.items():
        default = info.default
        if isinstance(default, Path):
            default = default.relative_to(PROJECT_DIR) if default.is_relative_to(PROJECT_DIR) else default
        rows.append((f"DEPTHCARDS_{name.upper()}", str(default), info.description or ""))
    return rows


def settings_markdown() -> str:
    """docs/settings.md: every setting as a table row (tests/test_settings_doc.py keeps it current)."""
    lines = [
        "# Settings",
        "",
        "Every setting can be given as an environment variable; `depthcards settings` prints the same list.",
        "",
        "| variable | default | what it sets |",
        "|---|---|---|",
    ]
    lines += [f"| `{env}` | `{default}` | {help_text} |" for env, default, help_text in describe_settings()]
    return "\n".join(lines) + "\n"
