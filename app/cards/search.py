"""Full-text search over both languages with SQLite FTS5.

unicode61 splits on spaces, which Chinese doesn't use; so each run of CJK
characters is stored as its overlapping bigrams ("版本计数" -> "版本 本计 计数"),
and a query is turned into the same bigrams as a phrase. Every word of two or
more characters is then findable; a single character matches as a prefix.
"""

from __future__ import annotations

import re

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[\w]+", re.UNICODE)


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """Text as stored in card_fts: CJK runs replaced by their bigrams."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_bigrams(m.group())) + " ", text)


def match_query(query: str) -> str | None:
    """A user's query -> an FTS5 MATCH expression (all terms must match), or None if nothing searchable."""
    terms: list[str] = []
    for piece in _CJK_RUN.split(query):
        for word in _WORD.findall(piece):
            terms.append(f'"{word}"*')
    for run in _CJK_RUN.findall(query):
        grams = _bigrams(run)
        terms.append(f'"{grams[0]}"*' if len(run) == 1 else '"' + " ".join(grams) + '"')
    return " AND ".join(terms) if terms else None
