"""`depthcards check` and `depthcards reload` as a person runs them: real processes, real files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import CARDS_DIR, ROOT


def depthcards(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_check_passes_on_the_deck() -> None:
    result = depthcards("check", "--cards-dir", str(CARDS_DIR))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "0 problem(s)" in result.stdout


def test_check_names_every_problem_with_file_and_line_on_a_broken_copy(tmp_path: Path) -> None:
    copy = tmp_path / "cards"
    shutil.copytree(CARDS_DIR, copy)
    card = copy / "m3-foundations" / "backprop-autodiff" / "inplace-version-counter.md"
    lines = card.read_text(encoding="utf-8").split("\n")
    difficulty_line = next(i for i, line in enumerate(lines) if line.startswith("difficulty:"))
    lines[difficulty_line] = "difficulty: impossible"
    card.write_text("\n".join(lines), encoding="utf-8")
    other = copy / "m3-foundations" / "backprop-autodiff" / "saved-tensors.md"
    other.write_text(other.read_text(encoding="utf-8").replace("### en", "### english", 1), encoding="utf-8")

    result = depthcards("check", "--cards-dir", str(copy))
    assert result.returncode == 1
    problems = result.stderr.strip().split("\n")
    rel = "cards/m3-foundations/backprop-autodiff"
    assert f"{rel}/inplace-version-counter.md:{difficulty_line + 1}: unknown difficulty 'impossible' (expected one of: easy, medium, hard)" in problems
    assert any(p.startswith(f"{rel}/saved-tensors.md:") and "unknown language block '### english'" in p for p in problems)
    # Cards that link to the now-invalid card report the dangling links too: every problem, not the first.
    assert len(problems) >= 3


def test_reload_indexes_into_the_data_dir(tmp_path: Path) -> None:
    result = depthcards("reload", "--data-dir", str(tmp_path), "--cards-dir", str(CARDS_DIR))
    assert result.returncode == 0, result.stderr
    assert "added" in result.stdout and (tmp_path / "depthcards.sqlite3").exists()
    again = depthcards("reload", "--data-dir", str(tmp_path), "--cards-dir", str(CARDS_DIR))
    assert "0 added, 0 changed" in again.stdout
