"""The `depthcards` command."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Optional

import typer

from app.export.cli import export_app, import_app
from app.settings import Settings, describe_settings, settings_markdown, settings_with

cli = typer.Typer(help="DepthCards: bilingual deep-learning interview cards.", no_args_is_help=True, add_completion=False)

CardsDir = Annotated[Optional[Path], typer.Option("--cards-dir", help="Folder of markdown cards.")]
DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder for the SQLite database.")]


@cli.command()
def check(cards_dir: CardsDir = None) -> None:
    """Validate every card; print every problem as path:line: message; exit 1 if there is any."""
    from app.library import load_library

    settings = settings_with(cards_dir=cards_dir)
    library = load_library(settings.cards_dir)
    for problem in library.problems:
        typer.echo(str(problem), err=True)
    typer.echo(
        f"{len(library.deck.cards)} valid card(s), {len(library.challenges.challenges)} valid challenge(s), "
        f"{len(library.problems)} problem(s) in {settings.cards_dir}"
    )
    raise typer.Exit(1 if library.problems else 0)


@cli.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="Address to listen on.")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port to listen on.")] = None,
    data_dir: DataDir = None,
    cards_dir: CardsDir = None,
) -> None:
    """Serve the web app (SQLite in the data dir)."""
    import uvicorn

    from app.main import create_app

    settings = settings_with(cards_dir=cards_dir, data_dir=data_dir, host=host, port=port)
    typer.echo(f"DepthCards on http://{settings.host}:{settings.port}  (data: {settings.data_dir})")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level)


@cli.command()
def reload(data_dir: DataDir = None, cards_dir: CardsDir = None) -> None:
    """Re-index the cards folder into the database now (a running server picks it up on its next request)."""
    from app.library import open_indexed

    settings = settings_with(cards_dir=cards_dir, data_dir=data_dir)
    _, report = open_indexed(settings.db_path, settings.cards_dir, now=datetime.now(UTC))
    for problem in report.problems:
        typer.echo(str(problem), err=True)
    typer.echo(report.summary())
    raise typer.Exit(1 if report.problems else 0)


@cli.command("settings")
def show_settings(
    markdown: Annotated[bool, typer.Option("--markdown", help="Print docs/settings.md instead of a plain table.")] = False,
) -> None:
    """List every setting: environment variable, default and help."""
    if markdown:
        typer.echo(settings_markdown(), nl=False)
        return
    rows = describe_settings()
    env_width = max(len(env) for env, _, _ in rows)
    default_width = max(len(default) for _, default, _ in rows)
    for env, default, help_text in rows:
        typer.echo(f"{env:{env_width}}  {default:{default_width}}  {help_text}")


# Study state: optimize, back up, restore ##################################


def _existing_database(settings: Settings) -> Path:
    if not settings.db_path.exists():
        typer.echo(f"no database at {settings.db_path}: run `depthcards serve` or `depthcards reload` first", err=True)
        raise typer.Exit(1)
    return settings.db_path


@cli.command()
def optimize(data_dir: DataDir = None) -> None:
    """Fit FSRS parameters to your own review history, compare them with the current ones, save and reschedule."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from sqlmodel import Session

    from app.db import open_database
    from app.errors import AppError
    from app.models import LOCAL_USER_ID
    from app.review.optimize import optimize as fit_and_save

    labels = {"fit": "Fitting (epochs)", "evaluate": "Comparing old and new", "reschedule": "Rescheduling items"}
    engine = open_database(_existing_database(settings_with(data_dir=data_dir)))
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=Console(stderr=True))
    tasks: dict[str, object] = {}

    def report(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = progress.add_task(labels.get(phase, phase), total=total)
        progress.update(tasks[phase], completed=done, total=total)  # type: ignore[arg-type]

    try:
        with Session(engine) as session, progress:
            result = fit_and_save(session, user_id=LOCAL_USER_ID, now=datetime.now(UTC), progress=report)
    except AppError as exc:
        typer.echo(exc.message, err=True)
        raise typer.Exit(1) from None
    typer.echo(f"Reviews that count: {result.counted_reviews}; scored: {result.old.reviews}")
    typer.echo(f"{'':12} {'old':>8} {'new':>8}")
    typer.echo(f"{'log loss':12} {result.old.log_loss:8.4f} {result.new.log_loss:8.4f}")
    typer.echo(f"{'RMSE(bins)':12} {result.old.rmse_bins:8.4f} {result.new.rmse_bins:8.4f}")
    if result.saved:
        typer.echo(f"Saved the new parameters; rescheduled {result.rescheduled} item(s).")
        typer.echo("parameters: " + ", ".join(f"{p:.4f}" for p in result.new_parameters))
    else:
        typer.echo("The new parameters fit your history no better: kept the current ones.")


@cli.command()
def backup(
    file: Annotated[Path, typer.Argument(help="JSON file to write ('-' for standard output).")],
    data_dir: DataDir = None,
) -> None:
    """Write your whole study state (settings, item states, review logs incl. undone ones) as JSON."""
    import os

    from sqlmodel import Session

    from app.db import open_database
    from app.errors import AppError
    from app.models import LOCAL_USER_ID
    from app.review.backup import dump

    engine = open_database(_existing_database(settings_with(data_dir=data_dir)))
    try:
        with Session(engine) as session:
            text = dump(session, user_id=LOCAL_USER_ID)
    except AppError as exc:
        typer.echo(exc.message, err=True)
        raise typer.Exit(1) from None
    if str(file) == "-":
        typer.echo(text, nl=False)
        return
    partial = file.with_name(file.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, file)  # never leave a half-written backup under the real name
    except OSError as exc:
        typer.echo(f"cannot write {file}: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"backed up to {file} ({len(text.encode()):,} bytes)", err=True)


@cli.command()
def restore(
    file: Annotated[Path, typer.Argument(help="A JSON file written by `depthcards backup`.")],
    data_dir: DataDir = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the study state this data dir already has.")] = False,
) -> None:
    """Restore a backup; refuses to overwrite existing study state unless --force (then replaces it in one transaction)."""
    from sqlmodel import Session

    from app.db import open_database
    from app.errors import AppError
    from app.models import LOCAL_USER_ID
    from app.review.backup import parse
    from app.review.backup import restore as restore_backup
    from app.review.items import sync_items

    try:
        doc = parse(file.read_text(encoding="utf-8"))  # all checked before any database is opened or created
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"cannot read {file}: {exc}", err=True)
        raise typer.Exit(1) from None
    except AppError as exc:
        typer.echo(f"{file}: {exc.message}", err=True)
        raise typer.Exit(1) from None
    settings = settings_with(data_dir=data_dir)
    engine = open_database(settings.db_path)
    now = datetime.now(UTC)
    try:
        with Session(engine) as session:
            counts = restore_backup(session, doc, user_id=LOCAL_USER_ID, now=now, force=force)
    except AppError as exc:
        typer.echo(f"{file}: {exc.message}", err=True)
        raise typer.Exit(1) from None
    sync_items(engine, now=now)  # placeholders whose card is indexed here come back at once
    typer.echo(f"restored {counts['item_states']} item state(s), {counts['review_logs']} review log(s) and the settings "
               f"into {settings.db_path}")
    if counts["placeholders"]:
        typer.echo(f"{counts['placeholders']} item(s) were created as retired placeholders because their cards are not "
                   "indexed here yet; `depthcards reload --cards-dir DIR` brings them back.")


cli.add_typer(export_app, name="export", help="Export the library: a self-contained HTML handbook, an Obsidian vault.")
cli.add_typer(import_app, name="import", help="Import reviews done elsewhere (Obsidian) into your history.")


def main() -> None:
    cli()
