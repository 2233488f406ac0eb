"""`depthcards export obsidian` and `depthcards import obsidian` as typed (CliRunner until app/cli.py wires them)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from app.export.cli import export_app, import_app


def test_export_then_import_obsidian(deck: Path, tmp_path: Path) -> None:
    dirs = ["--cards-dir", str(deck / "cards"), "--data-dir", str(deck / "data")]
    vault = tmp_path / "vault"
    first = CliRunner().invoke(export_app, ["obsidian", str(vault), "--with-schedule", *dirs])
    assert first.exit_code == 0, first.output
    created = int(re.search(r"(\d+) created", first.output).group(1))  # type: ignore[union-attr]
    assert created > 3
    again = CliRunner().invoke(export_app, ["obsidian", str(vault), *dirs])
    assert again.exit_code == 0 and f"0 created, 0 updated, {created} unchanged" in again.output
    imported = CliRunner().invoke(import_app, ["obsidian", str(vault), *dirs])
    assert imported.exit_code == 0, imported.output
    assert "0 review(s) imported" in imported.output


def test_clear_error_for_a_folder_that_is_not_our_vault(deck: Path, tmp_path: Path) -> None:
    busy = tmp_path / "notes"
    busy.mkdir()
    (busy / "diary.md").write_text("mine", encoding="utf-8")
    result = CliRunner().invoke(export_app, ["obsidian", str(busy), "--cards-dir", str(deck / "cards"), "--data-dir", str(deck / "data")])
    assert result.exit_code == 2
    assert "is not empty and is not a vault DepthCards exported" in result.output


def test_clear_error_for_an_unwritable_handbook_path(deck: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be", encoding="utf-8")
    result = CliRunner().invoke(export_app, ["html", "--out", str(blocker / "book.html"),
                                             "--cards-dir", str(deck / "cards"), "--data-dir", str(deck / "data")])
    assert result.exit_code == 2
    assert "cannot write" in result.output
