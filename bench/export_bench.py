"""Export benchmark (issue #5): the HTML handbook and the Obsidian vault for N synthetic cards.

For each size (100 and 1000 by default) the deck is written and indexed first (not timed), then it prints, as the
median over repeats: seconds per 1000 cards and bytes per card for the handbook (pre-rendered math, file written)
and for a fresh vault, plus an unchanged re-export of the vault (which must write nothing). Target: <= 2 s per
1000 cards for each export, with near-linear growth from 100 to 1000.

    .venv/bin/python bench/export_bench.py [--sizes 100 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlmodel import Session  # noqa: E402

from app.cards.synthetic import write_synthetic_deck  # noqa: E402
from app.library import open_indexed  # noqa: E402
from app.export import math  # noqa: E402
from app.export.handbook import build_handbook  # noqa: E402
from app.export.obsidian import export_vault  # noqa: E402


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.md"))


def run(n: int, repeats: int, work: Path) -> dict[str, float]:
    cards = work / f"deck-{n}" / "cards"
    write_synthetic_deck(cards, n)
    now = datetime.now(UTC)
    engine, _ = open_indexed(work / f"deck-{n}" / "db.sqlite3", cards, now=now)
    html_s, vault_s, again_s = [], [], []
    html_bytes = vault_bytes = 0.0
    for r in range(repeats):
        math._cache.clear()  # every repeat pays for KaTeX, as a fresh `depthcards export html` does
        out = work / f"handbook-{n}-{r}.html"
        with Session(engine) as session:
            t = time.perf_counter()
            book = build_handbook(session, now=now, cards_root=cards)
            out.write_text(book.html, encoding="utf-8")
            html_s.append(time.perf_counter() - t)
        html_bytes = book.report.total_bytes / n
        vault = work / f"vault-{n}-{r}"
        with Session(engine) as session:
            t = time.perf_counter()
            report = export_vault(session, vault=vault, cards_dir=cards, now=now)
            vault_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            again = export_vault(session, vault=vault, cards_dir=cards, now=now)
            again_s.append(time.perf_counter() - t)
        assert len(report.created) >= n and not (again.created or again.updated), "re-export must write nothing"
        vault_bytes = _dir_bytes(vault) / n
        shutil.rmtree(vault)
    engine.dispose()
    return {
        "html_s_per_1000": statistics.median(html_s) * 1000 / n,
        "html_bytes_per_card": html_bytes,
        "card_html_bytes": book.report.bytes_per_card,
        "vault_s_per_1000": statistics.median(vault_s) * 1000 / n,
        "vault_bytes_per_card": vault_bytes,
        "again_s_per_1000": statistics.median(again_s) * 1000 / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"node for KaTeX: {'yes' if math.node_available() else 'NO (math rendered in the page instead)'}")
    print(f"{'cards':>6} | {'html s/1000':>11} {'B/card (file)':>13} {'B/card (own)':>12} | {'vault s/1000':>12} "
          f"{'B/card':>7} | {'re-export s/1000':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            r = run(n, args.repeats, Path(tmp))
            print(f"{n:>6} | {r['html_s_per_1000']:>11.2f} {r['html_bytes_per_card']:>13.0f} {r['card_html_bytes']:>12.0f} | "
                  f"{r['vault_s_per_1000']:>12.2f} {r['vault_bytes_per_card']:>7.0f} | {r['again_s_per_1000']:>16.2f}")


if __name__ == "__main__":
    main()
