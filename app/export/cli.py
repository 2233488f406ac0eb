"""`depthcards export html|obsidian` and `depthcards import obsidian` (wired into app/cli.py by add_typer)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy import Engine

from app.export.common import ExportError, Progress, Selection
from app.settings import Settings, settings_with

export_app = typer.Typer(help="Export the cards for offline use: an HTML handbook or an Obsidian vault.",
                         no_args_is_help=True, add_completion=False)
import_app = typer.Typer(help="Bring back reviews done outside the app.", no_args_is_help=True, add_completion=False)



@import_app.callback()
def _import_group() -> None:
    """Bring back reviews done outside the app (a callback keeps `obsidian` a subcommand even standalone)."""


CardsDir = Annotated[Optional[Path], typer.Option("--cards-dir", help="Folder of markdown cards.")]
DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder for the SQLite database.")]
PROGRESS_FROM = 20  # cards: below this an export is instant and a bar is noise


def _open(settings: Settings) -> Engine:
    """The database with the index brought up to date with the cards folder (cheap when nothing changed)."""
    from app.library import open_indexed

    engine, report = open_indexed(settings.db_path, settings.cards_dir, now=datetime.now(UTC))
    if report.problems:
        typer.echo(f"note: {len(report.problems)} card problem(s); run `depthcards check` to see them", err=True)
    return engine


@contextmanager
def _progress(label: str) -> Iterator[Progress]:
    state: dict[str, object] = {}

    def update(done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        if "bar" not in state:
            bar = typer.progressbar(length=total, label=label, file=sys.stderr)
            state["bar"] = bar.__enter__()
            state["done"] = 0
        bar_ = state["bar"]
        bar_.update(done - int(state["done"]))  # type: ignore[attr-defined]
        state["done"] = done

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)  # type: ignore[attr-defined]


def _fail(exc: ExportError) -> typer.Exit:
    typer.echo(f"error: {exc.message}", err=True)
    return typer.Exit(2)


@export_app.command("html")
def export_html(
    out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: depthcards-handbook[-filters].html here).")] = None,
    lang: Annotated[str, typer.Option("--lang", help="zh, en or both (with a toggle in the page).")] = "both",
    module: Annotated[Optional[str], typer.Option("--module", help="Only this module (its id).")] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="Only this topic (its id).")] = None,
    math: Annotated[str, typer.Option("--math", help="prerender (KaTeX under node: renders with scripts off) or script (smaller file, rendered by the page).")] = "prerender",
    cards_dir: CardsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Write one self-contained HTML handbook: no network needed, math included."""
    from sqlmodel import Session

    from app.export.handbook import LANGS, build_handbook, handbook_filename

    if lang not in LANGS:
        raise typer.BadParameter(f"choose one of {', '.join(LANGS)}", param_hint="--lang")
    if math not in ("prerender", "script"):
        raise typer.BadParameter("choose prerender or script", param_hint="--math")
    settings = settings_with(cards_dir=cards_dir, data_dir=data_dir)
    selection = Selection(module=module, topic=topic)
    target = out or Path(handbook_filename(selection=selection, lang=lang))  # type: ignore[arg-type]
    engine = _open(settings)
    try:
        with Session(engine) as session, _progress("handbook") as progress:
            handbook = build_handbook(session, selection=selection, lang=lang, now=datetime.now(UTC),  # type: ignore[arg-type]
                                      cards_root=settings.cards_dir, prerender_math=math == "prerender", progress=progress)
    except ExportError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(handbook.html, encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: cannot write {target}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {target}: {handbook.report.summary()}")


@export_app.command("obsidian")
def export_obsidian(
    vault: Annotated[Path, typer.Argument(help="Folder of the vault (new, empty, or one exported before).")],
    with_schedule: Annotated[bool, typer.Option("--with-schedule", help="Write your FSRS state into each flashcard's scheduling comment.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Also overwrite generated notes you have edited.")] = False,
    cards_dir: CardsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Write or update an Obsidian vault: one note per card, maps of content, Spaced Repetition flashcards."""
    from sqlmodel import Session

    from app.export.obsidian import export_vault

    settings = settings_with(cards_dir=cards_dir, data_dir=data_dir)
    engine = _open(settings)
    try:
        with Session(engine) as session, _progress("vault") as progress:
            report = export_vault(session, vault=vault, cards_dir=settings.cards_dir, now=datetime.now(UTC),
                                  with_schedule=with_schedule, force=force, progress=progress)
    except ExportError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    for problem in report.problems:
        typer.echo(f"skipped: {problem}", err=True)
    for rel in report.conflicts:
        typer.echo(f"conflict: {rel} was edited since the last export; left alone (--force overwrites it)", err=True)
    for rel in report.foreign:
        typer.echo(f"conflict: {rel} exists and was not written by DepthCards; left alone", err=True)
    typer.echo(f"{vault}: {report.summary()}")
    raise typer.Exit(1 if report.conflicts or report.foreign else 0)


@import_app.command("obsidian")
def import_obsidian(
    vault: Annotated[Path, typer.Argument(help="The vault folder written by `depthcards export obsidian`.")],
    cards_dir: CardsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Merge the reviews done in Obsidian (the plugin's FSRS comments) into your review history."""
    from sqlmodel import Session

    from app.export.obsidian_import import import_vault

    settings = settings_with(cards_dir=cards_dir, data_dir=data_dir)
    engine = _open(settings)
    try:
        with Session(engine) as session:
            report = import_vault(session, vault=vault, now=datetime.now(UTC))
    except ExportError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    for line in report.skipped:
        typer.echo(f"skipped: {line}", err=True)
    typer.echo(f"{vault}: {report.summary()}")
