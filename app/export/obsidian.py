"""`depthcards export obsidian DIR`: write the vault, and keep it in step on every later export.

Safety rules (issue #5):
- A folder that is not empty must be a vault we exported (it has `.depthcards/manifest.json`); dot-entries such as
  `.obsidian/` do not count, so a vault freshly created in Obsidian is fine.
- The manifest records, for every note we wrote, the SHA-256 of its text as written, scheduling comments removed
  (reviewing in Obsidian rewrites those comments: that is not an edit). A note whose text still has that hash is
  ours to update or, when its card is gone, to delete. Any other difference is the user's edit: the note is reported
  as a conflict and left alone, unless --force. A file at one of our paths that we never wrote is never touched.
- Scheduling comments already in a note are carried over, so a re-export never loses reviews done in Obsidian;
  with --with-schedule the app's newer state replaces an older one.
- Nothing is written when nothing changed (not even the manifest), so a second export changes no file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from app.export import obsidian_notes as notes
from app.export import srs_syntax
from app.export.common import ExportError, Progress, Selection, no_progress, select_cards
from app.export.source import CardSource, read_sources
from app.models import LOCAL_USER_ID, ItemState
from app.review import scheduler

MANIFEST = Path(".depthcards") / "manifest.json"
MANIFEST_FORMAT = 1


@dataclass
class VaultReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    conflicts: list[str] = field(default_factory=list)  # edited by the user: left alone
    overwritten: list[str] = field(default_factory=list)  # edited by the user, replaced because of --force
    foreign: list[str] = field(default_factory=list)  # a file we did not write sits where a note belongs
    deleted: list[str] = field(default_factory=list)  # generated, unedited, and its card is gone
    released: list[str] = field(default_factory=list)  # its card is gone, but the user edited it: kept, no longer ours
    scheduled: int = 0  # flashcards that carry a scheduling comment
    pending_import: list[str] = field(default_factory=list)  # Obsidian has newer reviews than the app: kept
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{len(self.created)} created",
            f"{len(self.updated)} updated",
            f"{self.unchanged} unchanged",
            f"{len(self.deleted)} deleted",
            f"{len(self.conflicts)} conflict(s)",
        ]
        if self.overwritten:
            parts.append(f"{len(self.overwritten)} overwritten (--force)")
        if self.foreign:
            parts.append(f"{len(self.foreign)} not ours, left alone")
        if self.released:
            parts.append(f"{len(self.released)} edited and orphaned, kept")
        parts.append(f"{self.scheduled} flashcard schedule(s)")
        if self.pending_import:
            parts.append(f"{len(self.pending_import)} with newer Obsidian reviews (run `depthcards import obsidian`)")
        return ", ".join(parts)


def normalized_hash(text: str) -> str:
    """What counts as the user's edit: everything but line endings, trailing spaces and scheduling comments."""
    text = srs_syntax.strip_comments(text.replace("\r\n", "\n"))
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The folder ##############################################################


def _is_ours_or_empty(vault: Path) -> bool:
    if (vault / MANIFEST).is_file():
        return True
    return not any(not entry.name.startswith(".") for entry in vault.iterdir())


def prepare_vault(vault: Path) -> dict[str, Any]:
    """Check the folder can hold our vault (creating it if needed) and return its manifest."""
    if vault.exists() and not vault.is_dir():
        raise ExportError(f"{vault} is a file, not a folder")
    if vault.is_dir() and not _is_ours_or_empty(vault):
        raise ExportError(
            f"{vault} is not empty and is not a vault DepthCards exported (no {MANIFEST}): "
            "choose a new or empty folder, or a folder inside your vault"
        )
    try:
        vault.mkdir(parents=True, exist_ok=True)
        (vault / MANIFEST.parent).mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=vault / MANIFEST.parent, prefix=".probe-"):
            pass
    except PermissionError:
        raise ExportError(f"cannot write to {vault}: permission denied") from None
    except OSError as exc:
        raise ExportError(f"cannot write to {vault}: {exc.strerror or exc}") from None
    return read_manifest(vault)


def read_manifest(vault: Path) -> dict[str, Any]:
    path = vault / MANIFEST
    if not path.is_file():
        return {"format": MANIFEST_FORMAT, "generator": "depthcards", "notes": {}}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path} is unreadable ({exc}); move it away to start the vault afresh") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT or not isinstance(manifest.get("notes"), dict):
        raise ExportError(f"{path} is not a DepthCards manifest this version understands")
    return manifest


def _write(path: Path, text: str) -> None:
    """Atomic: a reader (Obsidian, sync tools) sees the old note or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dc-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _safe_relative(vault: Path, rel: str) -> Path | None:
    path = (vault / rel).resolve()
    return path if path.is_relative_to(vault.resolve()) else None


# Schedules ###############################################################


def app_schedules(session: Session, *, user_id: int) -> dict[str, tuple[srs_syntax.FsrsSchedule, datetime]]:
    """The user's FSRS state of every reviewed follow-up item, as the plugin's schedule (plus our last review)."""
    rows = session.exec(
        select(ItemState).where(col(ItemState.user_id) == user_id, col(ItemState.reps) > 0, col(ItemState.item_id).contains("#"))
    )
    out = {}
    for state in rows:
        schedule = to_plugin_schedule(state)
        if schedule is not None and state.last_reviewed_at is not None:
            out[state.item_id] = (schedule, state.last_reviewed_at)
    return out


def to_plugin_schedule(state: ItemState) -> srs_syntax.FsrsSchedule | None:
    """Our ItemState as the plugin's FSRS comment (same FSRS-6 state numbers and scales; the plugin's interval is
    ts-fsrs scheduled_days: whole days for a review, 0 in learning steps)."""
    card = scheduler.load_card(state.fsrs_card)
    if card.stability is None or card.difficulty is None or card.last_review is None:
        return None
    days = (card.due - card.last_review).total_seconds() / 86400
    interval = round(days) if int(card.state) == 2 else 0
    return srs_syntax.FsrsSchedule(
        due=card.due,
        interval=interval,
        stability=round(card.stability, 4),
        difficulty=round(card.difficulty, 4),
        state=int(card.state),
        reps=state.reps,
        lapses=state.lapses,
        learning_steps=card.step or 0,
        last_review=card.last_review,
    )


def _choose_schedules(
    source: CardSource,
    existing: dict[str, str],
    app: dict[str, tuple[srs_syntax.FsrsSchedule, datetime]] | None,
    report: VaultReport,
) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for f in source.followups:
        item = f"{source.row.id}#{f.key}"
        here = existing.get(f.key)
        ours = app.get(item) if app is not None else None
        if ours is None:
            if here is not None:
                chosen[f.key] = here
            continue
        schedule, _ = ours
        theirs = next((s for s in srs_syntax.parse_comment(here or "") if isinstance(s, srs_syntax.FsrsSchedule)), None)
        if theirs is not None and theirs.last_review is not None and schedule.last_review is not None and (
            theirs.last_review > schedule.last_review
        ):
            chosen[f.key] = here or ""
            report.pending_import.append(item)
        else:
            chosen[f.key] = schedule.comment()
    report.scheduled += len(chosen)
    return chosen


def _existing_comments(text: str) -> dict[str, str]:
    out = {}
    for flashcard in notes.flashcards_in(text):
        match = srs_syntax.COMMENT_RE.search(flashcard.card.text)
        if match is not None:
            out[flashcard.key] = match.group(0)
    return out


# Export ##################################################################


def export_vault(
    session: Session,
    *,
    vault: Path,
    cards_dir: Path,
    now: datetime,
    with_schedule: bool = False,
    force: bool = False,
    user_id: int = LOCAL_USER_ID,
    progress: Progress = no_progress,
) -> VaultReport:
    """Write or update the vault in `vault` from the indexed cards (see the module docstring for the rules)."""
    manifest = prepare_vault(vault)
    report = VaultReport()
    rows = select_cards(session, selection=Selection())
    sources, problems = read_sources(rows, cards_dir=cards_dir)
    report.problems.extend(str(p) for p in problems)
    names = notes.assign_names(sources)
    all_ids = {s.row.id for s in sources}
    app = app_schedules(session, user_id=user_id) if with_schedule else None
    known: dict[str, dict[str, Any]] = dict(manifest["notes"])
    new_manifest: dict[str, dict[str, Any]] = {}

    by_module: dict[str, list[CardSource]] = {}
    by_topic: dict[tuple[str, str], list[CardSource]] = {}
    for s in sources:
        by_module.setdefault(s.row.module_id, []).append(s)
        by_topic.setdefault((s.row.module_id, s.row.topic_id), []).append(s)

    # (path, kind, id, render(existing text or None) -> text)
    planned: list[tuple[str, str, str, Any]] = [
        (f"{notes.INDEX_NOTE}.md", "index", "", lambda _old: notes.index_note(list(by_module), by_module, names))
    ]
    for module_id, members in by_module.items():
        planned.append((names.module_path(module_id), "module", module_id,
                        lambda _old, m=module_id, ms=members: notes.module_note(m, ms, names)))
    for (module_id, topic_id), members in by_topic.items():
        planned.append((names.topic_path(module_id, topic_id), "topic", f"{module_id}/{topic_id}",
                        lambda _old, m=module_id, t=topic_id, ms=members: notes.topic_note(m, t, ms, names)))
    for s in sources:
        def render_card(old: str | None, s: CardSource = s) -> str:
            schedules = _choose_schedules(s, _existing_comments(old) if old else {}, app, report)
            return notes.card_note(s, names, schedules=schedules, all_ids=all_ids)

        planned.append((names.card_path(s), "card", s.row.id, render_card))

    total = len(planned)
    for done, (rel, kind, ident, render) in enumerate(planned, start=1):
        _sync_note(vault, rel, kind, ident, render, known, new_manifest, force=force, report=report)
        if done % 25 == 0 or done == total:
            progress(done, total)

    for rel, entry in sorted(known.items()):
        if rel in new_manifest:
            continue
        _retire_note(vault, rel, entry, report)

    _save_manifest(vault, manifest, new_manifest)
    return report


def _sync_note(
    vault: Path,
    rel: str,
    kind: str,
    ident: str,
    render: Any,
    known: dict[str, dict[str, Any]],
    new_manifest: dict[str, dict[str, Any]],
    *,
    force: bool,
    report: VaultReport,
) -> None:
    path = vault / rel
    entry = known.get(rel)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    text = render(old if entry is not None else None)
    fresh = {"kind": kind, "id": ident, "hash": normalized_hash(text)}
    if old is None:
        _write(path, text)
        report.created.append(rel)
        new_manifest[rel] = fresh
        return
    if entry is None:
        if normalized_hash(old) == fresh["hash"]:
            new_manifest[rel] = fresh  # already what we would write (e.g. a lost manifest): adopt it
            report.unchanged += 1
        else:
            report.foreign.append(rel)
        return
    edited = normalized_hash(old) != entry.get("hash")
    if not edited or force:
        if old == text:
            report.unchanged += 1
        else:
            _write(path, text)
            (report.overwritten if edited else report.updated).append(rel)
        new_manifest[rel] = fresh
    elif normalized_hash(old) == fresh["hash"]:
        report.unchanged += 1  # the user's edit is exactly our new text
        new_manifest[rel] = fresh
    else:
        report.conflicts.append(rel)
        new_manifest[rel] = entry  # still ours, still edited: the next export reports it again


def _retire_note(vault: Path, rel: str, entry: dict[str, Any], report: VaultReport) -> None:
    path = _safe_relative(vault, rel)
    if path is None or not path.is_file():
        return
    if normalized_hash(path.read_text(encoding="utf-8")) != entry.get("hash"):
        report.released.append(rel)
        return
    path.unlink()
    report.deleted.append(rel)
    parent = path.parent
    root = vault.resolve()
    while parent != root and parent.is_relative_to(root) and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _save_manifest(vault: Path, manifest: dict[str, Any], new_notes: dict[str, dict[str, Any]]) -> None:
    data = {**manifest, "format": MANIFEST_FORMAT, "generator": "depthcards", "notes": dict(sorted(new_notes.items()))}
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    path = vault / MANIFEST
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    _write(path, text)

