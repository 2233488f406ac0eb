"""What a card is, independent of how it is stored or shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Lang = Literal["zh", "en"]
Span = tuple[int, int]  # 0-based [start, end) lines of the card file
LANGS: tuple[Lang, ...] = ("zh", "en")
DIFFICULTIES = ("easy", "medium", "hard")

# Section key -> canonical English heading, in the order a card must use them.
SECTIONS: dict[str, str] = {
    "answer": "Answer",
    "insights": "Key insights",
    "math": "Math",
    "tradeoffs": "Trade-offs",
    "pitfalls": "Pitfalls",
    "followups": "Follow-ups",
    "examples": "Examples",
}
SECTION_NAMES_ZH: dict[str, str] = {
    "answer": "一句话回答",
    "insights": "关键洞见",
    "math": "数学推导",
    "tradeoffs": "工程权衡",
    "pitfalls": "常见陷阱",
    "followups": "追问",
    "examples": "代码示例",
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a card file, located by 1-based line."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Bilingual:
    zh: str
    en: str

    def get(self, lang: Lang) -> str:
        return self.zh if lang == "zh" else self.en


@dataclass(frozen=True)
class Named:
    id: str
    zh: str
    en: str


@dataclass(frozen=True)
class Section:
    """A section's markdown: what both languages share, then each language's own part."""

    key: str
    line: int
    shared: str
    text: Bilingual
    spans: dict[str, Span] = field(default_factory=dict, compare=False, repr=False)  # shared / zh / en


@dataclass(frozen=True)
class FollowUp:
    key: str
    line: int
    question: Bilingual
    answer: Bilingual
    spans: dict[str, Span] = field(default_factory=dict, compare=False, repr=False)  # q-zh, a-zh, q-en, a-en


@dataclass(frozen=True)
class CodeExample:
    """A python fence and the outcome it claims (sandbox/outcomes.py vocabulary)."""

    code: str
    expect: str
    line: int  # file line of the first code line
    expect_line: int | None = None  # line within the snippet where the error surfaces


@dataclass(frozen=True)
class Card:
    id: str
    path: str
    title: Bilingual
    module: Named
    topic: Named
    difficulty: str
    tags: tuple[str, ...]
    related: tuple[str, ...]
    sections: dict[str, Section]
    followups: tuple[FollowUp, ...]
    examples: tuple[CodeExample, ...] = field(default=())
    field_lines: dict[str, int] = field(default_factory=dict, compare=False)
    # The markdown-it tokens of the whole file, so rendering needs no second parse.
    tokens: tuple[Any, ...] = field(default=(), compare=False, repr=False)
