"""The `depthcards` command."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Optional

import typer

from app.settings import Settings, describe_settings

cli = typer.Typer(help="DepthCards: bilingual deep-learning interview cards.", no_args_is_help=True, add_completion=False)

CardsDir = Annotated[Optional[Path], typer.Option("--cards-dir", help="Folder of markdown cards.")]
DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder for the SQLite database.")]


def _settings(*, cards_dir: Path | None = None, data_dir: Path | None = None, **extra: object) -> Settings:
    overrides: dict[str, object] = {k: v for k, v in extra.items() if v is not None}
    if cards_dir is not None:
        overrides["cards_dir"] = cards_dir
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    return Settings(**overrides)  # type: ignore[arg-type]


@cli.command()
def check(cards_dir: CardsDir = None) -> None:
    """Validate every card; print every problem as path:line: message; exit 1 if there is any."""
    from app.cards.deck import load_deck

    settings = _settings(cards_dir=cards_dir)
    deck = load_deck(settings.cards_dir)
    for problem in deck.problems:
        typer.echo(str(problem), err=True)
    summary = f"{len(deck.cards)} valid card(s), {len(deck.problems)} problem(s) in {settings.cards_dir}"
    typer.echo(summary)
    raise typer.Exit(1 if deck.problems else 0)


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

    settings = _settings(cards_dir=cards_dir, data_dir=data_dir, host=host, port=port)
    typer.echo(f"DepthCards on http://{settings.host}:{settings.port}  (data: {settings.data_dir})")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level)


@cli.command()
def reload(data_dir: DataDir = None, cards_dir: CardsDir = None) -> None:
    """Re-index the cards folder into the database now (a running server picks it up on its next request)."""
    from app.db import open_database
    from app.cards.index import sync_cards
    from app.review.items import sync_items

    settings = _settings(cards_dir=cards_dir, data_dir=data_dir)
    engine = open_database(settings.db_path)
    report = sync_cards(engine, settings.cards_dir)
    sync_items(engine, now=datetime.now(UTC))
    for problem in report.problems:
        typer.echo(str(problem), err=True)
    typer.echo(report.summary())
    raise typer.Exit(1 if report.problems else 0)


@cli.command("settings")
def show_settings() -> None:
    """List every setting: environment variable, default and help."""
    for env, default, help_text in describe_settings():
        typer.echo(f"{env:28} {default:28} {help_text}")


def main() -> None:
    cli()
