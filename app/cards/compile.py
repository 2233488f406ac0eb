"""Card files -> parsed, validated and rendered cards (no database)."""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cards.deck import CardFile
from app.cards.model import Card, Problem
from app.cards.parser import parse_card
from app.cards.render import render_card

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Compiled:
    """A card file parsed, validated and rendered (card is None when it has problems)."""

    file: CardFile
    card: Card | None
    rendered: dict[str, Any] | None
    problems: list[Problem]

    @property
    def card_id(self) -> str:
        assert self.card is not None
        return self.card.id


def compile_file(file: CardFile) -> Compiled:
    card, problems = parse_card(file.text, file.rel)
    if card is None:
        return Compiled(file, None, None, problems)
    rendered = render_card(card)
    # The tokens served their purpose (one parse for validation and rendering); don't keep them alive.
    return Compiled(file, dataclasses.replace(card, tokens=()), rendered, problems)


# Below this many files a helper process costs more than it saves.
PARALLEL_THRESHOLD = 300


def compile_files(files: list[CardFile]) -> list[Compiled]:
    """Parse, validate and render each file; a large batch is shared with helper processes, one per spare core.

    markdown-it is pure Python, so a cold index of 1000 cards is CPU-bound (about 2.2 s on one core). Helpers are
    plain `python -m app.cards.compile` children fed pickled files: they import only the parser and renderer
    (0.1 s), unlike a multiprocessing pool, whose workers re-import the CLI that started the server (0.6 s).
    """
    helpers = min((os.cpu_count() or 1) - 1, 3)
    if len(files) < PARALLEL_THRESHOLD or helpers < 1:
        return [compile_file(file) for file in files]
    share = -(-len(files) // (helpers + 1))  # ceiling division: the parent takes the last, shortest share
    chunks = [files[i : i + share] for i in range(0, len(files), share)]
    results: list[list[Compiled] | None] = [None] * len(chunks)

    def run_helper(index: int, workdir: Path) -> None:
        # Files, not pipes: a pipe would need this thread to hold the GIL for every 64 KiB read, and the GIL
        # is busy with the parent's own share; waiting on the process releases it.
        source, target = workdir / f"in-{index}.pickle", workdir / f"out-{index}.pickle"
        try:
            source.write_bytes(pickle.dumps(chunks[index], protocol=pickle.HIGHEST_PROTOCOL))
            with source.open("rb") as stdin, target.open("wb") as stdout:
                subprocess.run(
                    [sys.executable, "-m", "app.cards.compile"], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                    timeout=600, check=True,
                )
            results[index] = pickle.loads(target.read_bytes())  # our own child's output, not user input
        except (OSError, subprocess.SubprocessError, pickle.UnpicklingError, EOFError) as exc:
            log.warning("card compile helper failed (%s); compiling its share here", exc)

    with tempfile.TemporaryDirectory(prefix="depthcards-compile-") as tmp:
        threads = [
            threading.Thread(target=run_helper, args=(i, Path(tmp)), daemon=True) for i in range(len(chunks) - 1)
        ]
        for thread in threads:
            thread.start()
        results[-1] = [compile_file(file) for file in chunks[-1]]
        for thread in threads:
            thread.join()
    return [c for i, chunk in enumerate(chunks) for c in (results[i] or [compile_file(f) for f in chunk])]


def _helper_main() -> None:
    """A helper: a pickled list of CardFile on stdin, the pickled list of Compiled on stdout."""
    batch = pickle.load(sys.stdin.buffer)
    pickle.dump([compile_file(file) for file in batch], sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    # Run under the module's real name, so what is pickled refers to app.cards.compile, not __main__.
    from app.cards import compile as _module

    _module._helper_main()
