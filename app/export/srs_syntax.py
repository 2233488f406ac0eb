"""The Obsidian Spaced Repetition plugin's note syntax, with its default settings (st3v3nmw/obsidian-spaced-repetition).

Two things live here: the plugin's FSRS scheduling comment
`<!--SR:!fsrs,<due>,<interval>,<stability>,<difficulty>,<state>,<reps>,<lapses>,<learningSteps>,<lastReview>-->`
(due and lastReview as JS `toISOString()`, "-" for none; state as ts-fsrs: 0 new, 1 learning, 2 review,
3 relearning, the same numbers as py-fsrs), and a port of the plugin's card grammar (its peggy grammar in
`generateParser`, default options), so tests and the exporter can see a note as the plugin will.

Grammar, tried in this order at the start of every line: an HTML comment (skipped), a ``` or ~~~ code block
(skipped), a single-line reversed card (`:::`), a single-line card (`::`), a multi-line reversed card (`??`),
a multi-line card (`?`), a cloze paragraph (`==…==`), else a loose line. A multi-line card is one or more
non-empty lines, a line holding only the separator, then lines up to a blank line (code blocks inside may
contain blank lines); its scheduling comment is its last line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

INLINE = "::"
INLINE_REVERSED = ":::"
MULTILINE = "?"
MULTILINE_REVERSED = "??"
COMMENT_RE = re.compile(r"<!--SR:(.*?)-->")
FSRS_PREFIX = "fsrs"


# Scheduling comments #####################################################


@dataclass(frozen=True)
class FsrsSchedule:
    """One card's schedule as the plugin stores it in the note."""

    due: datetime
    interval: float  # days (ts-fsrs scheduled_days; 0 while in learning steps)
    stability: float
    difficulty: float
    state: int  # 0 new, 1 learning, 2 review, 3 relearning
    reps: int
    lapses: int
    learning_steps: int
    last_review: datetime | None

    def segment(self) -> str:
        fields = [
            FSRS_PREFIX,
            format_timestamp(self.due),
            _js_number(self.interval),
            _js_number(self.stability),
            _js_number(self.difficulty),
            str(self.state),
            str(self.reps),
            str(self.lapses),
            str(self.learning_steps),
            format_timestamp(self.last_review),
        ]
        return "!" + ",".join(fields)

    def comment(self) -> str:
        return f"<!--SR:{self.segment()}-->"


@dataclass(frozen=True)
class Sm2Schedule:
    """The plugin's default (SM-2 style) schedule: due date, interval in days, ease x100."""

    due: str
    interval: int
    ease: int


def format_timestamp(moment: datetime | None) -> str:
    """JavaScript's Date.toISOString(): UTC, milliseconds, 'Z'."""
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime | None:
    text = text.strip()
    if text in ("", "-"):
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _js_number(value: float) -> str:
    """A number as JavaScript's String(n) writes it (shortest round-trip; integers without '.0')."""
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value}")
    if float(value).is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(float(value))


def parse_segment(segment: str) -> FsrsSchedule | Sm2Schedule | None:
    """One `!`-separated segment of a scheduling comment; None for the plugin's empty placeholder or junk."""
    fields = [f.strip() for f in segment.strip().split(",")]
    try:
        if fields[0] == FSRS_PREFIX:
            if len(fields) < 10:
                return None
            due = parse_timestamp(fields[1])
            if due is None:
                return None  # the plugin's placeholder for a sibling not reviewed yet
            return FsrsSchedule(
                due=due,
                interval=float(fields[2]),
                stability=float(fields[3]),
                difficulty=float(fields[4]),
                state=int(fields[5]),
                reps=int(fields[6]),
                lapses=int(fields[7]),
                learning_steps=int(fields[8]),
                last_review=parse_timestamp(fields[9]),
            )
        if len(fields) >= 3:
            return Sm2Schedule(due=fields[0], interval=int(fields[1]), ease=int(fields[2]))
    except ValueError:
        return None
    return None


def parse_comment(text: str) -> list[FsrsSchedule | Sm2Schedule | None]:
    """Every schedule in the first `<!--SR:…-->` comment of text (one per sibling card)."""
    match = COMMENT_RE.search(text)
    if match is None:
        return []
    return [parse_segment(s) for s in match.group(1).split("!") if s.strip()]


def strip_comments(text: str) -> str:
    """text without its scheduling comments (and without the lines that held only one)."""
    lines = [line for line in text.split("\n") if not (COMMENT_RE.fullmatch(line.strip()))]
    return COMMENT_RE.sub("", "\n".join(lines))


# Cards ###################################################################


class CardType(Enum):
    SINGLE_LINE = "single-line"
    SINGLE_LINE_REVERSED = "single-line-reversed"
    MULTI_LINE = "multi-line"
    MULTI_LINE_REVERSED = "multi-line-reversed"
    CLOZE = "cloze"


@dataclass(frozen=True)
class ParsedCard:
    type: CardType
    text: str
    first_line: int  # 0-based, like the plugin's
    last_line: int

    @property
    def front(self) -> str:
        lines = self.text.split("\n")
        sep = MULTILINE_REVERSED if self.type is CardType.MULTI_LINE_REVERSED else MULTILINE
        at = next(i for i, line in enumerate(lines) if line.strip() == sep)
        return "\n".join(lines[:at])

    @property
    def back(self) -> str:
        lines = self.text.split("\n")
        sep = MULTILINE_REVERSED if self.type is CardType.MULTI_LINE_REVERSED else MULTILINE
        at = next(i for i, line in enumerate(lines) if line.strip() == sep)
        return "\n".join(line for line in lines[at + 1 :] if not COMMENT_RE.fullmatch(line.strip()))

    @property
    def schedule(self) -> list[FsrsSchedule | Sm2Schedule | None]:
        return parse_comment(self.text)


_INLINE_CODE = re.compile(r"`[^`]*`")
_FENCE = re.compile(r"^( *)(`{3,}|~{3,})")
_CLOZE = re.compile(r"==(?:(?!==).)+==")


def _outside_inline_code(line: str) -> str:
    return _INLINE_CODE.sub(lambda m: "\0" * len(m.group(0)), line)


def _has_inline_mark(line: str, mark: str) -> bool:
    """The grammar's `inline` rule: at least one character (outside inline code) before the mark."""
    at = _outside_inline_code(line).find(mark)
    return at > 0


def _is_separator_line(line: str, mark: str) -> bool:
    return line.strip(" \t\f\v\u00a0\u3000") == mark and line.strip() == mark


def _is_blank(line: str) -> bool:
    """The grammar's separator_line with no end marker: only whitespace."""
    return line.strip() == ""


def _code_block_end(lines: list[str], start: int) -> int | None:
    """If a fenced block opens at lines[start], the index of its closing line (same marker, alone on its line)."""
    match = _FENCE.match(lines[start])
    if match is None:
        return None
    marker = match.group(2)
    i = start + 1
    while i < len(lines):
        line = lines[i]
        run = re.match(r"^(`+|~+)", line)
        if run and run.group(1) == marker and line == marker:
            return i
        nested = _FENCE.match(line)
        if nested is not None and not (run and run.group(1) == marker):
            inner = _code_block_end(lines, i)
            if inner is not None:
                i = inner + 1
                continue
        i += 1
    return None


def _multiline(lines: list[str], start: int, mark: str, *, code_aware: bool) -> tuple[int, int] | None:
    """(separator line, last line) of a multi-line card starting at start, or None."""
    i = start
    while i < len(lines) and lines[i] != "" and not _is_separator_line(lines[i], mark):
        i += 1
    if i == start or i >= len(lines) or not _is_separator_line(lines[i], mark):
        return None
    sep = i
    i += 1
    last = None
    while i < len(lines) and not _is_blank(lines[i]):
        end = _code_block_end(lines, i) if code_aware else None
        if end is not None:
            last, i = end, end + 1
            continue
        last, i = i, i + 1
    if last is None:
        return None
    return sep, last


def _cloze_paragraph(lines: list[str], start: int) -> int | None:
    """Last line of a cloze card starting at start: a run of non-empty lines one of which holds ==…==."""
    i = start
    found = False
    while i < len(lines) and lines[i] != "":
        if _CLOZE.search(_outside_inline_code(lines[i])):
            found = True
            break
        i += 1
    if not found:
        return None
    while i + 1 < len(lines) and not _is_blank(lines[i + 1]):
        i += 1
    return i


def parse_cards(text: str) -> list[ParsedCard]:
    """Every card the plugin (default settings) finds in a note's text (front matter excluded by the caller)."""
    lines = (text.replace("\r\n", "\n") + "\n\n\n").split("\n")
    cards: list[ParsedCard] = []
    i = 0

    def take(kind: CardType, first: int, last: int) -> None:
        cards.append(ParsedCard(kind, "\n".join(lines[first : last + 1]).rstrip(), first, last))

    while i < len(lines):
        line = lines[i]
        if line.startswith("<!--"):
            j = i
            while j < len(lines) and "-->" not in lines[j][4 if j == i else 0 :]:
                j += 1
            i = j + 1
            continue
        end = _code_block_end(lines, i)
        if end is not None:
            i = end + 1
            continue
        for mark, kind in ((INLINE_REVERSED, CardType.SINGLE_LINE_REVERSED), (INLINE, CardType.SINGLE_LINE)):
            if _has_inline_mark(line, mark):
                last = i + 1 if i + 1 < len(lines) and COMMENT_RE.fullmatch(lines[i + 1].strip() or "x") else i
                take(kind, i, last)
                i = last + 1
                break
        else:
            found = None
            for mark, kind, aware in (
                (MULTILINE_REVERSED, CardType.MULTI_LINE_REVERSED, False),
                (MULTILINE, CardType.MULTI_LINE, True),
            ):
                span = _multiline(lines, i, mark, code_aware=aware) if line.strip() else None
                if span is not None:
                    found = (kind, span[1])
                    break
            if found is not None:
                take(found[0], i, found[1])
                i = found[1] + 1
                continue
            last_cloze = _cloze_paragraph(lines, i) if line.strip() else None
            if last_cloze is not None:
                take(CardType.CLOZE, i, last_cloze)
                i = last_cloze + 1
                continue
            i += 1
    return cards


def split_front_matter(note: str) -> tuple[str, str]:
    """(front matter including its --- lines, the rest); the plugin blanks front matter before parsing."""
    if note.startswith("---\n"):
        end = note.find("\n---\n", 4)
        if end != -1:
            return note[: end + 5], note[end + 5 :]
    return "", note
