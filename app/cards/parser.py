"""Markdown card file -> Card, with every problem located by file and line.

Pure: no database, no web. The format is documented in docs/card-format.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markdown_it.token import Token

from app.cards.frontmatter import load_front_matter
from app.cards.model import (
    DIFFICULTIES,
    LANGS,
    SECTIONS,
    Bilingual,
    Card,
    CodeExample,
    FollowUp,
    Named,
    Problem,
    Section,
    Span,
)
from app.cards.markdown import MD as _MD
from app.cards.markdown import parse_fence_info
from sandbox.outcomes import SNIPPET_OUTCOMES

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_QUESTION_LABEL = {"zh": re.compile(r"^\*\*问\s*[:：]\s*\*\*\s*"), "en": re.compile(r"^\*\*Q\s*[:：]\s*\*\*\s*")}
_ANSWER_LABEL = {"zh": re.compile(r"^\*\*答\s*[:：]\s*\*\*\s*"), "en": re.compile(r"^\*\*A\s*[:：]\s*\*\*\s*")}
_HEADING_TO_KEY = {heading.lower(): key for key, heading in SECTIONS.items()}




@dataclass(frozen=True)
class _Heading:
    level: int
    text: str
    start: int  # 0-based line of the heading
    end: int  # 0-based line after the heading


class _Collector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.path, line, message))


def parse_card(text: str, path: str) -> tuple[Card | None, list[Problem]]:
    """Parse one card file; return the card (None if unusable) and every problem found."""
    out = _Collector(path)
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    tokens = _MD.parse(text)

    if not tokens or tokens[0].type != "front_matter":
        out.add(1, "missing YAML front matter (the file must start with a '---' line)")
        return None, out.problems
    fm_token = tokens[0]
    assert fm_token.map is not None
    meta, key_lines = _load_yaml(fm_token.content, out)
    if meta is None:
        return None, out.problems
    header = _read_front_matter(meta, key_lines, out)

    sections, followups = _read_body(tokens, lines, out)
    _check_shared_is_language_neutral(tokens, sections, out)
    examples = _read_code_examples(tokens, out)
    _check_math(tokens, out)

    if header is None or out.problems:
        return None, out.problems
    card = Card(
        path=path,
        sections=sections,
        followups=tuple(followups),
        examples=tuple(examples),
        field_lines=key_lines,
        tokens=tuple(tokens),
        **header,
    )
    return card, out.problems


# Front matter ############################################################


def _load_yaml(source: str, out: _Collector) -> tuple[dict[str, Any] | None, dict[str, int]]:
    front = load_front_matter(source)
    if front.error is not None:
        out.add(*front.error)
    return front.data, front.key_lines


def _read_front_matter(meta: dict[str, Any], key_lines: dict[str, int], out: _Collector) -> dict[str, Any] | None:
    def line_of(key: str) -> int:
        return key_lines.get(key, 1)

    ok = True
    for required in ("id", "title", "module", "topic", "difficulty"):
        if required not in meta:
            out.add(1, f"missing front-matter field '{required}'")
            ok = False

    card_id = meta.get("id")
    if "id" in meta and not (isinstance(card_id, str) and SLUG.match(card_id)):
        out.add(line_of("id"), f"id {card_id!r} is not a slug (lowercase letters, digits and single hyphens)")
        ok = False

    title = _bilingual_field(meta, "title", line_of("title"), out)
    module = _named_field(meta, "module", line_of("module"), out)
    topic = _named_field(meta, "topic", line_of("topic"), out)

    difficulty = meta.get("difficulty")
    if "difficulty" in meta and difficulty not in DIFFICULTIES:
        out.add(line_of("difficulty"), f"unknown difficulty {difficulty!r} (expected one of: {', '.join(DIFFICULTIES)})")
        ok = False

    tags = _slug_list(meta, "tags", line_of("tags"), out)
    related = _slug_list(meta, "related", line_of("related"), out)
    known = {"id", "title", "module", "topic", "difficulty", "tags", "related"}
    for key in meta:
        if key not in known:
            out.add(line_of(str(key)), f"unknown front-matter field '{key}'")
            ok = False

    if not ok or title is None or module is None or topic is None or tags is None or related is None:
        return None
    return {
        "id": card_id,
        "title": title,
        "module": module,
        "topic": topic,
        "difficulty": difficulty,
        "tags": tuple(tags),
        "related": tuple(related),
    }


def _bilingual_field(meta: dict[str, Any], key: str, line: int, out: _Collector) -> Bilingual | None:
    value = meta.get(key)
    if key not in meta:
        return None
    if not isinstance(value, dict):
        out.add(line, f"'{key}' must have 'zh' and 'en' entries")
        return None
    texts = {}
    for lang in LANGS:
        text = value.get(lang)
        if not isinstance(text, str) or not text.strip():
            out.add(line, f"'{key}' is missing its '{lang}' text")
        else:
            texts[lang] = text.strip()
    if len(texts) != 2:
        return None
    return Bilingual(zh=texts["zh"], en=texts["en"])


def _named_field(meta: dict[str, Any], key: str, line: int, out: _Collector) -> Named | None:
    names = _bilingual_field(meta, key, line, out)
    value = meta.get(key)
    ident = value.get("id") if isinstance(value, dict) else None
    if isinstance(value, dict) and not (isinstance(ident, str) and SLUG.match(ident)):
        out.add(line, f"'{key}' needs an 'id' that is a slug (got {ident!r})")
        return None
    if names is None or not isinstance(ident, str):
        return None
    return Named(id=ident, zh=names.zh, en=names.en)


def _slug_list(meta: dict[str, Any], key: str, line: int, out: _Collector) -> list[str] | None:
    value = meta.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        out.add(line, f"'{key}' must be a list of slugs")
        return None
    bad = [v for v in value if not SLUG.match(v)]
    if bad:
        out.add(line, f"'{key}' has entries that are not slugs: {', '.join(map(repr, bad))}")
        return None
    return list(value)


# Body ####################################################################


def _headings(tokens: list[Token]) -> list[_Heading]:
    found = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map is not None:
            found.append(_Heading(int(token.tag[1]), tokens[i + 1].content.strip(), token.map[0], token.map[1]))
    return found


def _slice(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start:end]).strip("\n")


def _read_body(
    tokens: list[Token], lines: list[str], out: _Collector
) -> tuple[dict[str, Section], list[FollowUp]]:
    headings = _headings(tokens)
    last_line = len(lines)
    h2 = [h for h in headings if h.level == 2]
    sections: dict[str, Section] = {}
    followups: list[FollowUp] = []
    order: list[str] = []
    order_lines: list[int] = []

    for index, heading in enumerate(h2):
        end = h2[index + 1].start if index + 1 < len(h2) else last_line
        name = heading.text.split("·")[0].strip()
        key = _HEADING_TO_KEY.get(name.lower())
        line = heading.start + 1
        if key is None:
            out.add(line, f"unknown section '## {heading.text}' (expected one of: {', '.join(SECTIONS.values())})")
            continue
        if key in order:
            out.add(line, f"duplicate section '## {SECTIONS[key]}'")
            continue
        order.append(key)
        order_lines.append(line)
        inner = [h for h in headings if heading.end <= h.start < end]
        if key == "followups":
            followups = _read_followups(inner, lines, end, line, out)
            sections[key] = Section(key, line, "", Bilingual("", ""))
        else:
            section = _read_language_blocks(key, line, heading.end, inner, lines, end, out)
            if section is not None:
                sections[key] = section

    expected = [k for k in SECTIONS if k in order]
    if order != expected:
        wrong_at = next(i for i, (a, b) in enumerate(zip(order, expected)) if a != b)
        out.add(order_lines[wrong_at], f"sections are out of order; expected: {', '.join(SECTIONS.values())}")
    canonical = list(SECTIONS)
    for key, heading_text in SECTIONS.items():
        if key not in order:
            # Point at where it belongs: the next section that is present, else the end of the file.
            later = [order_lines[order.index(k)] for k in canonical[canonical.index(key) + 1 :] if k in order]
            out.add(min(later) if later else last_line, f"missing section '## {heading_text}'")
    return sections, followups


def _read_language_blocks(
    key: str, line: int, body_start: int, inner: list[_Heading], lines: list[str], end: int, out: _Collector
) -> Section | None:
    blocks = [h for h in inner if h.level == 3]
    shared_end = blocks[0].start if blocks else end
    shared = _slice(lines, body_start, shared_end)
    spans = {"shared": (body_start, shared_end)}
    texts: dict[str, str] = {}
    for i, block in enumerate(blocks):
        block_end = blocks[i + 1].start if i + 1 < len(blocks) else end
        lang = block.text.strip().lower()
        if lang not in LANGS:
            out.add(block.start + 1, f"unknown language block '### {block.text}' in '## {SECTIONS[key]}' (expected zh or en)")
            continue
        if lang in texts:
            out.add(block.start + 1, f"duplicate '### {lang}' block in '## {SECTIONS[key]}'")
            continue
        body = _slice(lines, block.end, block_end)
        spans[lang] = (block.end, block_end)
        if not body.strip():
            out.add(block.start + 1, f"'## {SECTIONS[key]}' has an empty '### {lang}' block")
        texts[lang] = body
    for lang in LANGS:
        if lang not in texts:
            out.add(line, f"section '## {SECTIONS[key]}' is missing its '### {lang}' block")
    if set(texts) != set(LANGS):
        return None
    return Section(key, line, shared, Bilingual(zh=texts["zh"], en=texts["en"]), spans)


def _read_followups(
    inner: list[_Heading], lines: list[str], end: int, section_line: int, out: _Collector
) -> list[FollowUp]:
    questions = [h for h in inner if h.level == 3]
    if not questions:
        out.add(section_line, "'## Follow-ups' has no follow-up questions (each is a '### key' heading)")
    seen: set[str] = set()
    followups = []
    for i, q in enumerate(questions):
        q_end = questions[i + 1].start if i + 1 < len(questions) else end
        key, line = q.text.strip(), q.start + 1
        if not SLUG.match(key):
            out.add(line, f"follow-up key '{key}' is not a slug")
            continue
        if key in seen:
            out.add(line, f"duplicate follow-up key '{key}'")
            continue
        seen.add(key)
        langs = [h for h in inner if h.level == 4 and q.end <= h.start < q_end]
        parts: dict[str, tuple[str, str, Span, Span]] = {}
        for j, block in enumerate(langs):
            block_end = langs[j + 1].start if j + 1 < len(langs) else q_end
            lang = block.text.strip().lower()
            if lang not in LANGS:
                out.add(block.start + 1, f"unknown language block '#### {block.text}' in follow-up '{key}'")
                continue
            qa = _split_question_answer(lang, lines, block.end, block_end, key, out)
            if qa is not None:
                parts[lang] = qa
        for lang in LANGS:
            if lang not in [h.text.strip().lower() for h in langs]:
                out.add(line, f"follow-up '{key}' is missing its '#### {lang}' block")
        if set(parts) == set(LANGS):
            followups.append(
                FollowUp(
                    key=key,
                    line=line,
                    question=Bilingual(zh=parts["zh"][0], en=parts["en"][0]),
                    answer=Bilingual(zh=parts["zh"][1], en=parts["en"][1]),
                    spans={f"{qa}-{lang}": parts[lang][2 if qa == "q" else 3] for lang in LANGS for qa in ("q", "a")},
                )
            )
    return followups


def _split_question_answer(
    lang: str, lines: list[str], start: int, end: int, key: str, out: _Collector
) -> tuple[str, str, Span, Span] | None:
    """Split a follow-up language block into its labelled question and answer (with their line spans)."""
    q_label, a_label = _QUESTION_LABEL[lang], _ANSWER_LABEL[lang]
    q_word, a_word = ("**问：**", "**答：**") if lang == "zh" else ("**Q:**", "**A:**")
    body = lines[start:end]
    first = next((i for i, text in enumerate(body) if text.strip()), None)
    if first is None or not q_label.match(body[first].strip()):
        out.add(start + 1 + (first or 0), f"follow-up '{key}' ({lang}) must start with its question, labelled {q_word}")
        return None
    answer_at = next((i for i in range(first + 1, len(body)) if a_label.match(body[i].strip())), None)
    if answer_at is None:
        out.add(start + 1 + first, f"follow-up '{key}' ({lang}) has no answer (a paragraph starting with {a_word})")
        return None
    question = " ".join(text.strip() for text in body[first:answer_at] if text.strip())
    question = q_label.sub("", question).strip()
    answer_lines = body[answer_at:]
    answer_lines[0] = a_label.sub("", answer_lines[0].strip())
    answer = "\n".join(answer_lines).strip()
    if not question or not answer:
        out.add(start + 1 + first, f"follow-up '{key}' ({lang}) has an empty question or answer")
        return None
    return question, answer, (start + first, start + answer_at), (start + answer_at, end)


# Code and math ###########################################################


def _read_code_examples(tokens: list[Token], out: _Collector) -> list[CodeExample]:
    examples = []
    for token in tokens:
        if token.type != "fence" or token.map is None:
            continue
        lang, attrs = parse_fence_info(token.info)
        if lang not in ("python", "py"):
            continue
        fence_line = token.map[0] + 1
        expect = attrs.get("expect")
        if expect is None:
            out.add(fence_line, f"python block has no expect= claim (one of: {', '.join(SNIPPET_OUTCOMES)})")
            continue
        if expect not in SNIPPET_OUTCOMES:
            out.add(fence_line, f"unknown expect={expect} (expected one of: {', '.join(SNIPPET_OUTCOMES)})")
            continue
        expect_line = None
        if "line" in attrs:
            n_lines = token.content.count("\n")
            if not attrs["line"].isdigit() or not 1 <= int(attrs["line"]) <= n_lines:
                out.add(fence_line, f"line={attrs['line']} is not a line of this {n_lines}-line block")
                continue
            if expect == "ok":
                out.add(fence_line, "line= only makes sense with an error outcome, not expect=ok")
                continue
            expect_line = int(attrs["line"])
        examples.append(CodeExample(code=token.content, expect=expect, line=fence_line + 1, expect_line=expect_line))
    return examples


def _check_shared_is_language_neutral(tokens: list[Token], sections: dict[str, Section], out: _Collector) -> None:
    """What comes before `### zh` is shown in both languages, so it may hold math, code and tables, not prose."""
    for section in sections.values():
        start, end = section.spans.get("shared", (0, 0))
        for i, token in enumerate(tokens):
            if token.type != "inline" or token.map is None or not start <= token.map[0] < end:
                continue
            if tokens[i - 1].type != "paragraph_open" or token.level != 1:
                continue  # headings, table cells and list items may be labels
            words = "".join(child.content for child in token.children or [] if child.type == "text")
            if _PROSE.search(words):
                out.add(
                    token.map[0] + 1,
                    f"prose in the shared part of '## {SECTIONS[section.key]}': write it in the '### zh' and '### en' blocks "
                    "(only math, code and tables are shown in both languages)",
                )
                break


_PROSE = re.compile(r"[^\W\d_]{2,}")  # a word of two or more letters, in any script


def _check_math(tokens: list[Token], out: _Collector) -> None:
    for token in tokens:
        if token.type != "inline" or token.map is None or not token.children:
            continue
        line = token.map[0] + 1
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "text" and "$" in child.content:
                out.add(line, "unbalanced math delimiter '$' (close it, or escape a literal dollar as \\$)")
                break
