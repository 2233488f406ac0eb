"""The vault read back as Obsidian and its Spaced Repetition plugin would, and kept safe across re-exports."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.cards.index import sync_cards
from app.export import obsidian_notes, srs_syntax
from app.export.common import ExportError
from app.export.obsidian import MANIFEST, export_vault
from app.models import CardRow
from tests.export.conftest import T0

WIKILINK = re.compile(r"\[\[([^\]|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")
FORBIDDEN = ["#", "|", "^", ":", "%%", "[[", "]]"]


CODE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def links_in(text: str) -> list[str]:
    """Wikilinks as Obsidian sees them: not inside code."""
    return WIKILINK.findall(INLINE_CODE.sub("", CODE.sub("", text)))


def export(session: Session, deck: Path, vault: Path, **kwargs: object) -> object:
    return export_vault(session, vault=vault, cards_dir=deck / "cards", now=T0, **kwargs)  # type: ignore[arg-type]


def notes_of(vault: Path) -> dict[str, str]:
    return {str(p.relative_to(vault)): p.read_text(encoding="utf-8") for p in sorted(vault.rglob("*.md")) if ".depthcards" not in p.parts}


def snapshot(vault: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(vault)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(vault.rglob("*")) if p.is_file()}


def test_vault_reads_back_as_obsidian_and_the_plugin_would(session: Session, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    report = export(session, deck, vault)
    rows = {row.id: row for row in session.exec(select(CardRow).where(col(CardRow.retired_at).is_(None)))}
    notes = notes_of(vault)
    names = {Path(rel).stem for rel in notes}
    mocs = len({r.module_id for r in rows.values()}) + len({(r.module_id, r.topic_id) for r in rows.values()})
    assert len(report.created) == len(notes) == len(rows) + mocs + 1  # cards, maps of content, the index
    assert len(names) == len(notes)  # names are unique, so every link resolves to one note

    card_notes = 0
    for rel, text in notes.items():
        assert not any(bad in Path(rel).stem for bad in FORBIDDEN), rel
        front, body = srs_syntax.split_front_matter(text)
        props = yaml.safe_load(front.strip().strip("-"))  # valid YAML
        assert isinstance(props, dict), rel
        for target in links_in(text):
            assert target in names, f"{rel}: [[{target}]] resolves to no note"
        if "id" not in props:
            assert srs_syntax.parse_cards(body) == [] or "#flashcards" not in text
            continue
        card_notes += 1
        row = rows[props["id"]]
        assert props["aliases"] == [row.title_zh, row.title_en]
        assert f"dl/{row.module_id}/{row.topic_id}" in props["tags"] and all("/" in t for t in props["tags"])
        assert props["difficulty"] == row.difficulty
        assert WIKILINK.fullmatch(props["module"]) and WIKILINK.fullmatch(props["topic"])
        assert len(props["related"]) == len(row.related)
        # Related cards are linked in the body too, so the graph view draws the edges.
        related_line = next(line for line in body.split("\n") if line.startswith("Related"))
        assert len(WIKILINK.findall(related_line)) == len(row.related)
        # Every card the plugin finds is one of our follow-ups, in order, none of them stray.
        cards = srs_syntax.parse_cards(body)
        assert [c.type for c in cards] == [srs_syntax.CardType.MULTI_LINE] * len(row.followup_keys), rel
        assert [f.key for f in obsidian_notes.flashcards_in(text)] == row.followup_keys
        lines = body.split("\n")
        tag = lines.index(obsidian_notes.flashcard_tag(row.module_id, row.topic_id))
        assert all(c.first_line + 0 > tag for c in cards)
        for c in cards:
            assert not any(line.startswith(">") for line in c.text.split("\n")), "flashcards stay outside callouts"
            assert "**问：**" in c.front and "**Q:**" in c.front and "**答：**" in c.back and "**A:**" in c.back
        assert "$" in body and "$$" in text  # math kept as $...$ / $$...$$
        assert "> [!" in body  # sections' languages as foldable callouts
    assert card_notes == len(rows)


def test_names_are_sanitized_and_stable(session: Session, deck: Path, tmp_path: Path) -> None:
    assert obsidian_notes.sanitize_name("Q: a|b #1 ^x %%y [[z]] a/b", fallback="id") == "Q - a-b 1 x %y (z) a-b"
    assert obsidian_notes.sanitize_name("CON", fallback="con-card") == "CON (con-card)"
    assert obsidian_notes.sanitize_name("...", fallback="x") == "x"
    export(session, deck, tmp_path / "a")
    export(session, deck, tmp_path / "b")
    assert notes_of(tmp_path / "a") == notes_of(tmp_path / "b")


def test_a_second_export_changes_no_file(session: Session, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    export(session, deck, vault)
    before = snapshot(vault)
    report = export(session, deck, vault)
    assert report.created == report.updated == report.deleted == report.conflicts == []  # type: ignore[attr-defined]
    assert snapshot(vault) == before  # same bytes and same modification times, manifest included


def _edit_card(deck: Path, engine: Engine, card_file: str, old: str, new: str) -> None:
    path = next((deck / "cards").rglob(card_file))
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    sync_cards(engine, deck / "cards", now=T0)


def test_a_users_edit_survives_a_reexport_and_force_overwrites_it(
    session: Session, engine: Engine, deck: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    export(session, deck, vault)
    notes = notes_of(vault)
    edited = next(rel for rel in notes if rel.endswith("In-place operations and the version counter.md"))
    untouched = next(rel for rel in notes if rel.endswith("What autograd saves for backward.md"))
    (vault / edited).write_text(notes[edited] + "\nMy own note: ask about this in the interview.\n", encoding="utf-8")
    # Both cards change at the source, so the export wants to rewrite both notes.
    _edit_card(deck, engine, "inplace-version-counter.md", "### en\n", "### en\nEDITED SOURCE. ")
    _edit_card(deck, engine, "saved-tensors.md", "### en\n", "### en\nEDITED SOURCE. ")
    session.expire_all()

    report = export(session, deck, vault)
    assert report.conflicts == [edited]  # type: ignore[attr-defined]
    assert untouched in report.updated  # type: ignore[attr-defined]
    assert "My own note" in (vault / edited).read_text(encoding="utf-8")
    assert "EDITED SOURCE" in (vault / untouched).read_text(encoding="utf-8")
    assert export(session, deck, vault).conflicts == [edited]  # type: ignore[attr-defined]  # still reported

    forced = export(session, deck, vault, force=True)
    assert forced.overwritten == [edited]  # type: ignore[attr-defined]
    text = (vault / edited).read_text(encoding="utf-8")
    assert "My own note" not in text and "EDITED SOURCE" in text


def test_never_deletes_what_it_did_not_create(session: Session, engine: Engine, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    export(session, deck, vault)
    notes = notes_of(vault)
    gone = next(rel for rel in notes if rel.endswith("Leaf tensors and requires_grad.md"))
    topic_folder = (vault / gone).parent
    mine = [vault / "My notes.md", topic_folder / "My topic notes.md"]
    for path in mine:
        path.write_text("# mine\n[[Leaf tensors and requires_grad]]\n", encoding="utf-8")
    next((deck / "cards").rglob("leaf-tensors-requires-grad.md")).unlink()
    sync_cards(engine, deck / "cards", now=T0)
    session.expire_all()

    report = export(session, deck, vault)
    assert report.deleted == [gone]  # type: ignore[attr-defined]
    assert all(path.read_text(encoding="utf-8").startswith("# mine") for path in mine)
    assert report.foreign == []  # type: ignore[attr-defined]


def test_clear_errors_for_folders_that_cannot_hold_the_vault(session: Session, deck: Path, tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.md").write_text("mine", encoding="utf-8")
    with pytest.raises(ExportError, match="not empty and is not a vault DepthCards exported"):
        export(session, deck, busy)
    assert sorted(p.name for p in busy.iterdir()) == ["thesis.md"]

    a_file = tmp_path / "file.md"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(ExportError, match="is a file"):
        export(session, deck, a_file)
    with pytest.raises(ExportError, match="cannot write to"):
        export(session, deck, a_file / "vault")

    fresh = tmp_path / "new-obsidian-vault"
    (fresh / ".obsidian").mkdir(parents=True)  # a vault just created in Obsidian is still "empty"
    export(session, deck, fresh)
    assert (fresh / MANIFEST).is_file()


def test_reviews_in_obsidian_are_not_edits_and_survive_a_reexport(session: Session, deck: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    export(session, deck, vault)
    rel, text = next((r, t) for r, t in notes_of(vault).items() if "%%fu " in t)
    flashcard = obsidian_notes.flashcards_in(text)[0]
    comment = srs_syntax.FsrsSchedule(T0 + timedelta(days=3), 3, 3.17, 5.28, 2, 1, 0, 0, T0).comment()
    (vault / rel).write_text(text.replace(flashcard.card.text, flashcard.card.text + "\n" + comment, 1), encoding="utf-8")
    assert obsidian_notes.flashcards_in((vault / rel).read_text(encoding="utf-8"))[0].card.schedule

    before = snapshot(vault)
    report = export(session, deck, vault)
    assert report.conflicts == []  # type: ignore[attr-defined]
    assert snapshot(vault) == before
    assert comment in (vault / rel).read_text(encoding="utf-8")
