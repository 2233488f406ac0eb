"""What the vault's notes say: file names, properties, sections, wikilinks and flashcards (no file I/O here).

Layout: `<Module>/<Module>.md` and `<Module>/<Topic>/<Topic>.md` are maps of content, each card is
`<Module>/<Topic>/<Card title>.md`, and `DepthCards.md` lists the modules. Names come from the English titles,
sanitized for Obsidian links and every file system, and made unique (case-insensitively) by the card, module or
topic id, so they are the same from one export to the next.

A card note ends with its follow-ups as Spaced Repetition flashcards, under the note's only
`#flashcards/<module>/<topic>` tag and outside any callout. Each card's first line is `%%fu <key>%%`, hidden in
Obsidian, which ties it to the review item `<card id>#<key>` for `depthcards import obsidian`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from app.cards.model import SECTION_NAMES_ZH, SECTIONS
from app.export import srs_syntax
from app.export.source import CardSource

INDEX_NOTE = "DepthCards"
FOLLOWUP_MARK = re.compile(r"^%%fu ([a-z0-9]+(?:-[a-z0-9]+)*)%%$")
_CALLOUTS = {"answer": "abstract", "insights": "tip", "math": "note", "tradeoffs": "info", "pitfalls": "warning", "examples": "example"}
# Examples before Follow-ups: nothing may follow the flashcards, or the plugin's tag would reach it.
NOTE_SECTIONS = ("answer", "insights", "math", "tradeoffs", "pitfalls", "examples")
_MAX_NAME = 120


# Names ###################################################################

_REPLACE = [("%%", "%"), ("[[", "("), ("]]", ")"), ("[", "("), ("]", ")"), (":", " -"), ("|", "-"), ("/", "-"),
            ("\\", "-"), ("#", ""), ("^", ""), ("*", ""), ("?", ""), ('"', "'"), ("<", "("), (">", ")")]
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def sanitize_name(text: str, *, fallback: str) -> str:
    """A file name Obsidian can link to: none of # | ^ : %% [[ ]] (nor / \\ * ? " < >), no control characters."""
    name = unicodedata.normalize("NFC", text)
    name = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in name)
    for bad, good in _REPLACE:
        name = name.replace(bad, good)
    name = re.sub(r"\s+", " ", name).strip(" .-")
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME].rsplit(" ", 1)[0].rstrip(" .-") or name[:_MAX_NAME]
    if not name or name.lower().split(".")[0] in _RESERVED:
        name = f"{name} ({fallback})".strip() if name else fallback
    return name


@dataclass(frozen=True)
class Names:
    """Every generated note's name (no .md) and vault-relative path."""

    cards: dict[str, str]  # card id -> name
    modules: dict[str, str]  # module id -> name
    topics: dict[tuple[str, str], str]  # (module id, topic id) -> name
    paths: dict[str, str] = field(default_factory=dict)  # note key -> relative path

    def card_path(self, source: CardSource) -> str:
        row = source.row
        return f"{self.modules[row.module_id]}/{self.topics[(row.module_id, row.topic_id)]}/{self.cards[row.id]}.md"

    def module_path(self, module_id: str) -> str:
        return f"{self.modules[module_id]}/{self.modules[module_id]}.md"

    def topic_path(self, module_id: str, topic_id: str) -> str:
        return f"{self.modules[module_id]}/{self.topics[(module_id, topic_id)]}/{self.topics[(module_id, topic_id)]}.md"


def assign_names(sources: list[CardSource]) -> Names:
    wanted: dict[tuple[str, ...], tuple[str, str]] = {("index",): (INDEX_NOTE, "index")}
    for s in sources:
        row = s.row
        wanted[("module", row.module_id)] = (row.module_en, row.module_id)
        wanted[("topic", row.module_id, row.topic_id)] = (row.topic_en, f"{row.module_id}-{row.topic_id}")
        wanted[("card", row.id)] = (row.title_en, row.id)
    names = {key: sanitize_name(title, fallback=ident) for key, (title, ident) in wanted.items()}
    # Links resolve by name, so names must be unique in the vault; case-insensitively, for macOS and Windows.
    for _ in range(3):
        seen: dict[str, list[tuple[str, ...]]] = {}
        for key, name in names.items():
            seen.setdefault(name.casefold(), []).append(key)
        clashes = [keys for keys in seen.values() if len(keys) > 1]
        if not clashes:
            break
        for keys in clashes:
            for key in keys:
                if key != ("index",):
                    names[key] = f"{names[key]} ({wanted[key][1]})"
    return Names(
        cards={k[1]: v for k, v in names.items() if k[0] == "card"},
        modules={k[1]: v for k, v in names.items() if k[0] == "module"},
        topics={(k[1], k[2]): v for k, v in names.items() if k[0] == "topic"},
    )


# Markdown helpers ########################################################

_INLINE_CODE_OR_MATH = re.compile(r"(`+)(?:(?!\1).)+?\1|\$\$.+?\$\$|\$[^$\n]+?\$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _escape_plugin_marks(markdown: str) -> str:
    """Keep prose from turning into stray flashcards (`::`, `==`) or links to nowhere (`[[`): outside code and math,
    they get a backslash."""
    out = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened is not None and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if opened is not None:
            fence = opened.group(1)
            out.append(line)
            continue
        if "::" in line or "==" in line or "[[" in line:
            pieces = []
            last = 0
            for m in _INLINE_CODE_OR_MATH.finditer(line):
                pieces.append(_escape(line[last : m.start()]))
                pieces.append(m.group(0))
                last = m.end()
            pieces.append(_escape(line[last:]))
            line = "".join(pieces)
        out.append(line)
    return "\n".join(out)


def _escape(prose: str) -> str:
    return prose.replace("::", ":\\:").replace("==", "=\\=").replace("[[", "\\[\\[")


def _without_blank_lines(markdown: str) -> str:
    """The plugin ends a card at a blank line: keep blank lines only inside fenced code (which the plugin skips)."""
    out = []
    fence: str | None = None
    for line in markdown.strip("\n").split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened is not None and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opened is not None:
            fence = opened.group(1)
            out.append(line)
        elif line.strip():
            out.append(line)
    return "\n".join(out)


def _callout(kind: str, title: str, markdown: str) -> str:
    body = "\n".join(f"> {line}" if line else ">" for line in markdown.strip("\n").split("\n"))
    return f"> [!{kind}]+ {title}\n{body}"


def _yaml_str(text: str) -> str:
    # JSON strings are valid YAML double-quoted scalars, and this quotes every character YAML treats specially.
    return json.dumps(text, ensure_ascii=False)


def _link(name: str) -> str:
    return f"[[{name}]]"


def _properties(items: list[tuple[str, str | list[str]]]) -> str:
    lines = ["---"]
    for key, value in items:
        if isinstance(value, list):
            lines.append(f"{key}:" if value else f"{key}: []")
            lines.extend(f"  - {v}" for v in value)
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    return "\n".join(lines)


# Notes ###################################################################


def flashcard_tag(module_id: str, topic_id: str) -> str:
    return f"#flashcards/{module_id}/{topic_id}"


def card_note(source: CardSource, names: Names, *, schedules: dict[str, str], all_ids: set[str]) -> str:
    """A card's note; schedules maps follow-up key -> its `<!--SR:…-->` comment (absent: not scheduled)."""
    row = source.row
    related = [names.cards[r] for r in dict.fromkeys(row.related) if r in all_ids and r != row.id]
    props = _properties(
        [
            ("id", row.id),
            ("aliases", [_yaml_str(row.title_zh), _yaml_str(row.title_en)]),
            ("tags", [f"dl/{row.module_id}/{row.topic_id}", *(f"dl/{t}" for t in row.tags)]),
            ("module", _yaml_str(_link(names.modules[row.module_id]))),
            ("topic", _yaml_str(_link(names.topics[(row.module_id, row.topic_id)]))),
            ("difficulty", row.difficulty),
            ("related", [_yaml_str(_link(n)) for n in related]),
            ("source", _yaml_str(row.path)),
        ]
    )
    parts = [props, f"# {row.title_zh} · {row.title_en}"]
    up = f"Topic · 主题：{_link(names.topics[(row.module_id, row.topic_id)])}"
    parts.append(up + ("\nRelated · 相关：" + " · ".join(_link(n) for n in related) if related else ""))
    for key in NOTE_SECTIONS:
        section = source.sections[key]
        parts.append(f"## {SECTIONS[key]} · {SECTION_NAMES_ZH[key]}")
        if section.shared.strip():
            parts.append(_escape_plugin_marks(section.shared.strip("\n")))
        for lang, title in (("zh", "中文"), ("en", "English")):
            parts.append(_language_block(_CALLOUTS[key], title, _escape_plugin_marks(section.text.get(lang))))  # type: ignore[arg-type]
    parts.append(f"## {SECTIONS['followups']} · {SECTION_NAMES_ZH['followups']}")
    parts.append(flashcard_tag(row.module_id, row.topic_id))
    for f in source.followups:
        front = [f"%%fu {f.key}%%", f"**问：** {_one_line(f.question.zh)}", f"**Q:** {_one_line(f.question.en)}"]
        back = [f"**答：** {_without_blank_lines(f.answer.zh)}", f"**A:** {_without_blank_lines(f.answer.en)}"]
        card = "\n".join([*front, srs_syntax.MULTILINE, *back])
        if f.key in schedules:
            card += "\n" + schedules[f.key]
        parts.append(card)
    return "\n\n".join(parts) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _language_block(kind: str, title: str, markdown: str) -> str:
    """A foldable callout, unless something in it would read as a flashcard there (the plugin does not skip code
    inside a callout); then a plain heading, under which fenced code is safe."""
    callout = _callout(kind, title, markdown)
    if not srs_syntax.parse_cards(callout):
        return callout
    return f"### {title}\n\n{markdown.strip()}"


def module_note(module_id: str, sources: list[CardSource], names: Names) -> str:
    first = sources[0].row
    topics: dict[str, list[CardSource]] = {}
    for s in sources:
        topics.setdefault(s.row.topic_id, []).append(s)
    props = _properties([("aliases", [_yaml_str(first.module_zh)]), ("tags", [f"dl/{module_id}"]), ("depthcards", "module")])
    lines = [f"# {first.module_zh} · {first.module_en}", f"Index · 索引：{_link(INDEX_NOTE)}", "## Topics · 主题"]
    for topic_id, members in topics.items():
        r = members[0].row
        lines.append(f"- {_link(names.topics[(module_id, topic_id)])} · {r.topic_zh} ({len(members)})")
    return props + "\n\n" + "\n\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n"


def topic_note(module_id: str, topic_id: str, sources: list[CardSource], names: Names) -> str:
    first = sources[0].row
    props = _properties(
        [
            ("aliases", [_yaml_str(first.topic_zh)]),
            ("tags", [f"dl/{module_id}/{topic_id}"]),
            ("module", _yaml_str(_link(names.modules[module_id]))),
            ("depthcards", "topic"),
        ]
    )
    head = [f"# {first.topic_zh} · {first.topic_en}", f"Module · 模块：{_link(names.modules[module_id])}", "## Cards · 卡片"]
    items = [f"- {_link(names.cards[s.row.id])} · {s.row.title_zh} · {s.row.difficulty}" for s in sources]
    return props + "\n\n" + "\n\n".join(head) + "\n\n" + "\n".join(items) + "\n"


def index_note(module_ids: list[str], sources_by_module: dict[str, list[CardSource]], names: Names) -> str:
    props = _properties([("tags", ["dl"]), ("depthcards", "index")])
    items = [
        f"- {_link(names.modules[m])} · {sources_by_module[m][0].row.module_zh} ({len(sources_by_module[m])})" for m in module_ids
    ]
    body = (
        "# DepthCards · 深度学习面试卡片\n\n"
        "Exported by DepthCards: notes it generated are updated by the next export unless you edit them. "
        "Follow-ups are flashcards for the Spaced Repetition plugin (set its algorithm to FSRS to keep the schedules).\n\n"
        "## Modules · 模块\n\n" + "\n".join(items)
    )
    return props + "\n\n" + body + "\n"


# Reading notes back ######################################################


@dataclass(frozen=True)
class NoteFlashcard:
    key: str
    card: srs_syntax.ParsedCard


def flashcards_in(note: str) -> list[NoteFlashcard]:
    """The note's follow-up flashcards (multi-line cards whose front starts with our %%fu key%% line)."""
    _, body = srs_syntax.split_front_matter(note)
    found = []
    for card in srs_syntax.parse_cards(body):
        if card.type is not srs_syntax.CardType.MULTI_LINE:
            continue
        mark = FOLLOWUP_MARK.match(card.text.split("\n", 1)[0].strip())
        if mark is not None:
            found.append(NoteFlashcard(mark.group(1), card))
    return found
