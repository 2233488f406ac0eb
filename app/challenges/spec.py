"""Challenge files -> Challenge values, with every problem located by file and line.

A challenge is a markdown file in a `challenges/` folder next to the cards it trains
(`cards/<module>/<topic>/challenges/<id>.md`); the format is documented in docs/card-format.md.
Pure: no database, no web, no torch.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from markdown_it.token import Token

from app.cards.frontmatter import load_front_matter
from app.cards.markdown import MD as _MD
from app.cards.markdown import parse_fence_info
from app.cards.model import DIFFICULTIES, LANGS, Bilingual, Problem
from app.challenges.model import (
    CHALLENGES_DIR,
    CODE_SECTIONS,
    DIAGNOSIS_KEYS,
    IDENTIFIER,
    INPUT_DTYPES,
    INPUT_INITS,
    KINDS,
    MAX_INPUT_ELEMENTS,
    REQUIRED,
    SECTIONS,
    SLUG,
    TRIGGER_OUTCOMES,
    Challenge,
    ChallengeSet,
    Choice,
    Expectation,
    InputSpec,
)
from sandbox import outcomes

__all__ = ["Challenge", "ChallengeSet", "iter_challenge_files", "load_challenges", "parse_challenge"]
_HEADING_TO_KEY = {heading.lower(): key for key, heading in SECTIONS.items()}

class _Out:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.path, line, message))


# Files ###################################################################


def iter_challenge_files(cards_dir: Path) -> Iterator[Path]:
    """Every *.md directly inside a `challenges/` folder under cards_dir, in a stable order."""
    for path in sorted(cards_dir.rglob(f"{CHALLENGES_DIR}/*.md")):
        if path.parent.name == CHALLENGES_DIR and not path.name.startswith(("_", ".")) and path.name.lower() != "readme.md":
            yield path


def load_challenges(cards_dir: Path, *, card_ids: Iterable[str] | None = None) -> ChallengeSet:
    """Parse every challenge file; check unique ids and (when card_ids is given) that each names a real card."""
    result = ChallengeSet()
    if not cards_dir.is_dir():
        return result
    known = set(card_ids) if card_ids is not None else None
    first_path: dict[str, str] = {}
    for path in iter_challenge_files(cards_dir):
        try:
            rel = str(path.relative_to(cards_dir.parent))
        except ValueError:
            rel = str(path)
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            result.problems.append(Problem(rel, 1, "file is not valid UTF-8"))
            continue
        challenge, problems = parse_challenge(text, rel)
        result.problems.extend(problems)
        if challenge is None:
            continue
        if challenge.id in first_path:
            line = challenge.lines.get("id", 1)
            result.problems.append(Problem(rel, line, f"duplicate challenge id '{challenge.id}' (also used by {first_path[challenge.id]})"))
            continue
        if known is not None and challenge.card not in known:
            result.problems.append(Problem(rel, challenge.lines.get("card", 1), f"card '{challenge.card}' does not exist"))
            continue
        first_path[challenge.id] = rel
        result.challenges[challenge.id] = challenge
    return result


# One file ################################################################


def parse_challenge(text: str, path: str) -> tuple[Challenge | None, list[Problem]]:
    """Parse one challenge file; return the challenge (None if unusable) and every problem found."""
    out = _Out(path)
    text = text.replace("\r\n", "\n")
    tokens = _MD.parse(text)
    if not tokens or tokens[0].type != "front_matter":
        out.add(1, "missing YAML front matter (the file must start with a '---' line)")
        return None, out.problems
    meta, lines = _load_yaml(tokens[0].content, out)
    if meta is None:
        return None, out.problems
    fields = _read_front_matter(meta, lines, out)
    present: dict[str, int] = {}  # every known section heading, valid or not -> its line
    sections = _read_sections(tokens, text.split("\n"), out, present)
    kind = fields.get("kind")
    if kind in REQUIRED:
        last = len(text.split("\n"))
        for key in REQUIRED[kind]:
            if key not in present:
                out.add(last, f"a {kind} challenge needs a '## {SECTIONS[key]}' section")
        for key in CODE_SECTIONS:
            if key in present and key not in REQUIRED[kind]:
                out.add(present[key], f"a {kind} challenge has no '## {SECTIONS[key]}' section")
        _check_code(kind, fields, sections, out)
    if out.problems or fields.get("_bad"):
        return None, out.problems
    for key, value in sections.items():
        lines[f"section:{key}"] = value["line"]
    prompt = sections["prompt"]
    explanation = sections.get("explanation")
    challenge = Challenge(
        path=path,
        prompt=Bilingual(prompt["zh"], prompt["en"]),
        prompt_shared=prompt.get("shared", ""),
        starter=sections.get("starter", {}).get("code", ""),
        solution=sections.get("solution", {}).get("code", ""),
        snippet=sections.get("snippet", {}).get("code", ""),
        explanation=Bilingual(explanation["zh"], explanation["en"]) if explanation else None,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        lines=lines,
        **{k: v for k, v in fields.items() if not k.startswith("_")},
    )
    return challenge, out.problems


def _load_yaml(source: str, out: _Out) -> tuple[dict[str, Any] | None, dict[str, int]]:
    front = load_front_matter(source)
    if front.error is not None:
        out.add(*front.error)
    return front.data, front.key_lines


_COMMON = ("id", "card", "kind", "title", "difficulty", "hints")
_BY_KIND = {
    "trigger": ("expect",),
    "fix": ("call", "inputs", "backward", "budget_bytes", "tolerance"),
    "predict": ("choices", "answer"),
}


def _read_front_matter(meta: dict[str, Any], lines: dict[str, int], out: _Out) -> dict[str, Any]:
    def at(key: str) -> int:
        return lines.get(key, 1)

    fields: dict[str, Any] = {}
    for required in ("id", "card", "kind", "title"):
        if required not in meta:
            out.add(1, f"missing front-matter field '{required}'")
    for key in ("id", "card"):
        value = meta.get(key)
        if key in meta and not (isinstance(value, str) and SLUG.match(value)):
            out.add(at(key), f"{key} {value!r} is not a slug (lowercase letters, digits and single hyphens)")
        elif isinstance(value, str):
            fields[key] = value
    kind = meta.get("kind")
    if "kind" in meta and kind not in KINDS:
        out.add(at("kind"), f"unknown kind {kind!r} (expected one of: {', '.join(KINDS)})")
    elif kind in KINDS:
        fields["kind"] = kind
    title = _bilingual(meta.get("title"), "title", at("title"), out) if "title" in meta else None
    if title is not None:
        fields["title"] = title
    difficulty = meta.get("difficulty", "medium")
    if difficulty not in DIFFICULTIES:
        out.add(at("difficulty"), f"unknown difficulty {difficulty!r} (expected one of: {', '.join(DIFFICULTIES)})")
    fields["difficulty"] = difficulty
    fields["hints"] = _hints(meta.get("hints"), lines, out)
    if kind in KINDS and kind != "predict" and not fields["hints"] and "hints" not in meta:
        out.add(1, f"a {kind} challenge needs at least one hint ('hints' list of zh/en entries)")
    allowed = set(_COMMON) | set(_BY_KIND.get(kind, ()))
    for key in meta:
        if key not in allowed:
            where = f" of a {kind} challenge" if kind in KINDS else ""
            out.add(at(str(key)), f"unknown front-matter field '{key}'{where}")
    if kind == "trigger":
        _read_trigger(meta, lines, out, fields)
    elif kind == "fix":
        _read_fix(meta, lines, out, fields)
    elif kind == "predict":
        _read_predict(meta, lines, out, fields)
    return fields


def _bilingual(value: Any, what: str, line: int, out: _Out) -> Bilingual | None:
    if not isinstance(value, dict):
        out.add(line, f"'{what}' must have 'zh' and 'en' entries")
        return None
    texts = {}
    for lang in LANGS:
        text = value.get(lang)
        if not isinstance(text, str) or not text.strip():
            out.add(line, f"'{what}' is missing its '{lang}' text")
        else:
            texts[lang] = text.strip()
    return Bilingual(texts["zh"], texts["en"]) if len(texts) == 2 else None


def _hints(value: Any, lines: dict[str, int], out: _Out) -> tuple[Bilingual, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        out.add(lines.get("hints", 1), "'hints' must be a list of entries with 'zh' and 'en'")
        return ()
    hints = []
    for i, item in enumerate(value):
        hint = _bilingual(item, f"hint {i + 1}", lines.get(f"hints.{i}", lines.get("hints", 1)), out)
        if hint is not None:
            hints.append(hint)
    return tuple(hints)


def _read_trigger(meta: dict[str, Any], lines: dict[str, int], out: _Out, fields: dict[str, Any]) -> None:
    raw = meta.get("expect")
    line = lines.get("expect", 1)
    if raw is None:
        out.add(1, "a trigger challenge needs 'expect' (the outcome its backward must hit)")
        return
    spec = {"outcome": raw} if isinstance(raw, str) else raw
    if not isinstance(spec, dict):
        out.add(line, "'expect' must be an outcome name or a mapping with 'outcome'")
        return
    outcome = spec.get("outcome")
    if outcome not in TRIGGER_OUTCOMES:
        out.add(line, f"'expect' outcome {outcome!r} is not one of: {', '.join(TRIGGER_OUTCOMES)}")
        return
    diagnosis = {}
    message = None
    for key, value in spec.items():
        if key == "outcome":
            continue
        if key == "message" and isinstance(value, str) and value:
            message = value
        elif key in DIAGNOSIS_KEYS and isinstance(value, str) and value:
            if outcome != outcomes.INPLACE_VERSION_ERROR:
                out.add(lines.get(f"expect.{key}", line), f"'expect.{key}' only applies to inplace_version_error")
            diagnosis[key] = value
        else:
            out.add(lines.get(f"expect.{key}", line), f"unknown or empty 'expect.{key}' (allowed: message, {', '.join(DIAGNOSIS_KEYS)})")
    fields["expect"] = Expectation(outcome, diagnosis, message)


def _read_fix(meta: dict[str, Any], lines: dict[str, int], out: _Out, fields: dict[str, Any]) -> None:
    call = meta.get("call", "forward")
    if not (isinstance(call, str) and IDENTIFIER.match(call)):
        out.add(lines.get("call", 1), f"'call' {call!r} is not a function name")
    fields["call"] = call
    backward = meta.get("backward", True)
    if not isinstance(backward, bool):
        out.add(lines.get("backward", 1), "'backward' must be true or false")
    fields["backward"] = backward is not False
    budget = meta.get("budget_bytes")
    if budget is not None and not (isinstance(budget, int) and not isinstance(budget, bool) and budget > 0):
        out.add(lines.get("budget_bytes", 1), "'budget_bytes' must be a positive whole number of bytes")
        budget = None
    if budget is not None and backward is False:
        out.add(lines.get("budget_bytes", 1), "'budget_bytes' needs backward: true (it measures what backward keeps)")
    fields["budget_bytes"] = budget
    tolerance = meta.get("tolerance") or {}
    if not isinstance(tolerance, dict) or not all(
        k in ("rtol", "atol") and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for k, v in tolerance.items()
    ):
        out.add(lines.get("tolerance", 1), "'tolerance' must be a mapping with rtol and/or atol (non-negative numbers)")
        tolerance = {}
    fields["rtol"] = float(tolerance.get("rtol", 1e-4))
    fields["atol"] = float(tolerance.get("atol", 1e-6))
    raw = meta.get("inputs")
    if not isinstance(raw, dict) or not raw:
        out.add(lines.get("inputs", 1), "a fix challenge needs 'inputs': a mapping of name -> {shape, dtype, init, requires_grad}")
        fields["_bad"] = True
        return
    inputs = []
    for name, spec in raw.items():
        line = lines.get(f"inputs.{name}", lines.get("inputs", 1))
        parsed = _input_spec(str(name), spec, line, out)
        if parsed is not None:
            inputs.append(parsed)
    if backward is not False and inputs and not any(i.requires_grad for i in inputs):
        out.add(lines.get("inputs", 1), "with backward: true at least one input must have requires_grad: true")
    fields["inputs"] = tuple(inputs)


def _input_spec(name: str, spec: Any, line: int, out: _Out) -> InputSpec | None:
    if not IDENTIFIER.match(name):
        out.add(line, f"input name {name!r} is not an identifier")
        return None
    if not isinstance(spec, dict):
        out.add(line, f"input '{name}' must be a mapping with at least 'shape'")
        return None
    unknown = set(spec) - {"shape", "dtype", "init", "requires_grad"}
    if unknown:
        out.add(line, f"input '{name}' has unknown keys: {', '.join(sorted(map(str, unknown)))}")
        return None
    shape = spec.get("shape")
    if not (
        isinstance(shape, list)
        and len(shape) <= 6
        and all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 4096 for d in shape)
    ):
        out.add(line, f"input '{name}' needs a 'shape': a list of at most 6 sizes from 1 to 4096")
        return None
    value = InputSpec(name, tuple(shape), spec.get("dtype", "float32"), spec.get("init", "randn"), spec.get("requires_grad", True))
    if value.dtype not in INPUT_DTYPES:
        out.add(line, f"input '{name}' has dtype {value.dtype!r} (expected one of: {', '.join(INPUT_DTYPES)})")
        return None
    if value.init not in INPUT_INITS:
        out.add(line, f"input '{name}' has init {value.init!r} (expected one of: {', '.join(INPUT_INITS)})")
        return None
    if not isinstance(value.requires_grad, bool):
        out.add(line, f"input '{name}': requires_grad must be true or false")
        return None
    if value.numel > MAX_INPUT_ELEMENTS:
        out.add(line, f"input '{name}' has {value.numel} elements (at most {MAX_INPUT_ELEMENTS})")
        return None
    return value


def _read_predict(meta: dict[str, Any], lines: dict[str, int], out: _Out, fields: dict[str, Any]) -> None:
    raw = meta.get("choices")
    if not isinstance(raw, list) or len(raw) < 2:
        out.add(lines.get("choices", 1), "a predict challenge needs 'choices': a list of at least two")
        fields["_bad"] = True
        return
    choices: list[Choice] = []
    for i, item in enumerate(raw):
        line = lines.get(f"choices.{i}", 1)
        if not isinstance(item, dict):
            out.add(line, "each choice needs 'id', 'zh', 'en' and 'match'")
            continue
        choice_id = item.get("id")
        if not (isinstance(choice_id, str) and SLUG.match(choice_id)):
            out.add(line, f"choice id {choice_id!r} is not a slug")
            continue
        if choice_id in {c.id for c in choices}:
            out.add(line, f"duplicate choice id '{choice_id}'")
            continue
        text = _bilingual(item, f"choice '{choice_id}'", line, out)
        match = _match(item.get("match"), choice_id, lines.get(f"choices.{i}.match", line), out)
        unknown = set(item) - {"id", "zh", "en", "match"}
        if unknown:
            out.add(line, f"choice '{choice_id}' has unknown keys: {', '.join(sorted(map(str, unknown)))}")
        if text is not None and match is not None and not unknown:
            choices.append(Choice(choice_id, text, match))
    seen = [tuple(sorted((k, str(v)) for k, v in c.match.items())) for c in choices]
    if len(set(seen)) != len(seen):
        out.add(lines.get("choices", 1), "two choices have the same 'match': the sandbox could not tell them apart")
    answer = meta.get("answer")
    if answer is None:
        out.add(1, "a predict challenge needs 'answer' (the choice you expect; the test suite checks it in the sandbox)")
    elif answer not in {c.id for c in choices}:
        out.add(lines.get("answer", 1), f"answer {answer!r} is not the id of a choice")
    fields["choices"] = tuple(choices)
    fields["answer"] = answer


def _match(value: Any, choice_id: str, line: int, out: _Out) -> dict[str, Any] | None:
    if not isinstance(value, dict) or value.get("outcome") not in outcomes.ALL_OUTCOMES:
        out.add(line, f"choice '{choice_id}' needs 'match' with an 'outcome' (one of: {', '.join(outcomes.ALL_OUTCOMES)})")
        return None
    for key, item in value.items():
        ok = (
            key == "outcome"
            or (key == "line" and isinstance(item, int) and not isinstance(item, bool) and item >= 1)
            or (key == "stdout" and isinstance(item, str))
        )
        if not ok:
            out.add(line, f"choice '{choice_id}': 'match.{key}' is not allowed (outcome, line: number, stdout: text)")
            return None
    return dict(value)


# Body ####################################################################


def _read_sections(tokens: list[Token], lines: list[str], out: _Out, present: dict[str, int]) -> dict[str, dict[str, Any]]:
    """`## Heading` sections: prose ones keep zh/en (and a shared part), code ones their one python fence."""
    heads = [
        (i, int(t.tag[1]), tokens[i + 1].content.strip(), t.map[0])
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.map is not None
    ]
    h2 = [h for h in heads if h[1] == 2]
    sections: dict[str, dict[str, Any]] = {}
    for n, (index, _level, text, start) in enumerate(h2):
        end_index = h2[n + 1][0] if n + 1 < len(h2) else len(tokens)
        end_line = h2[n + 1][3] if n + 1 < len(h2) else len(lines)
        key = _HEADING_TO_KEY.get(text.split("·")[0].strip().lower())
        if key is None:
            out.add(start + 1, f"unknown section '## {text}' (expected one of: {', '.join(SECTIONS.values())})")
            continue
        if key in present:
            out.add(start + 1, f"duplicate section '## {SECTIONS[key]}'")
            continue
        present[key] = start + 1
        body = tokens[index + 3 : end_index]
        if key in CODE_SECTIONS:
            fences = [t for t in body if t.type == "fence" and parse_fence_info(t.info)[0] in ("python", "py")]
            if len(fences) != 1:
                out.add(start + 1, f"'## {SECTIONS[key]}' must hold exactly one ```python block (found {len(fences)})")
                continue
            fence = fences[0]
            assert fence.map is not None
            sections[key] = {"line": start + 1, "code": fence.content, "code_line": fence.map[0] + 2}
        else:
            sub = [h for h in heads if h[1] == 3 and start < h[3] < end_line]
            section = _language_blocks(key, start, sub, lines, end_line, out)
            if section is not None:
                sections[key] = section
    return sections


def _language_blocks(
    key: str, start: int, sub: list[tuple[int, int, str, int]], lines: list[str], end: int, out: _Out
) -> dict[str, Any] | None:
    heading_end = start + 1
    shared_end = sub[0][3] if sub else end
    section: dict[str, Any] = {"line": start + 1, "shared": "\n".join(lines[heading_end:shared_end]).strip()}
    for n, (_i, _level, text, at) in enumerate(sub):
        lang = text.strip().lower()
        block_end = sub[n + 1][3] if n + 1 < len(sub) else end
        if lang not in LANGS:
            out.add(at + 1, f"unknown language block '### {text}' in '## {SECTIONS[key]}' (expected zh or en)")
            continue
        if lang in section:
            out.add(at + 1, f"duplicate '### {lang}' block in '## {SECTIONS[key]}'")
            continue
        body = "\n".join(lines[at + 1 : block_end]).strip()
        if not body:
            out.add(at + 1, f"'## {SECTIONS[key]}' has an empty '### {lang}' block")
        section[lang] = body
    missing = [lang for lang in LANGS if lang not in section]
    for lang in missing:
        out.add(start + 1, f"section '## {SECTIONS[key]}' is missing its '### {lang}' block")
    return None if missing else section


def _check_code(kind: str, fields: dict[str, Any], sections: dict[str, dict[str, Any]], out: _Out) -> None:
    """Every code block compiles; a fix challenge's starter and solution define the function the checker calls."""
    for key in CODE_SECTIONS:
        section = sections.get(key)
        if section is None:
            continue
        try:
            tree = ast.parse(section["code"], filename=f"<{key}>")
        except SyntaxError as exc:
            out.add(section["code_line"] + (exc.lineno or 1) - 1, f"'## {SECTIONS[key]}' code does not compile: {exc.msg}")
            continue
        call = fields.get("call")
        if kind == "fix" and isinstance(call, str):
            names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if call not in names:
                out.add(section["line"], f"'## {SECTIONS[key]}' does not define {call}() at top level (the checker calls it)")
