"""Math for the offline handbook, rendered once at export time with the vendored KaTeX under node.

Pre-rendered math needs no script to show, so it renders wherever the file is opened (a browser from file://,
Obsidian's HTML view, a print). When node is not installed the handbook falls back to inlining katex.min.js and
rendering in the page, which still works offline in a browser.
"""

from __future__ import annotations

import html
import json
import logging
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from app.templating import STATIC_DIR

log = logging.getLogger(__name__)

KATEX_DIR = STATIC_DIR / "vendor" / "katex-0.19.1"
_SCRIPT = Path(__file__).with_name("katex_render.js")
# The markup app/cards/markdown.py emits for math (its content is HTML-escaped TeX).
MATH_RE = re.compile(r'<(span|div) class="math (inline|display)">(.*?)</\1>', re.DOTALL)

_cache: dict[tuple[str, bool], str | None] = {}
_CACHE_LIMIT = 50_000


def node_available() -> bool:
    return shutil.which("node") is not None


def render_many(formulas: list[tuple[str, bool]]) -> dict[tuple[str, bool], str | None]:
    """KaTeX HTML for each (tex, display) pair, None where KaTeX refuses the TeX; one node process for all new ones."""
    todo = list(dict.fromkeys(f for f in formulas if f not in _cache))
    if todo:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed")
        result = subprocess.run(
            [node, str(_SCRIPT), str(KATEX_DIR / "katex.min.js")],
            input=json.dumps(todo),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"KaTeX under node failed: {result.stderr.strip()[:500]}")
        rendered = json.loads(result.stdout)
        if len(_cache) + len(todo) > _CACHE_LIMIT:
            _cache.clear()
        _cache.update(zip(todo, rendered))
    return {f: _cache.get(f) for f in formulas}


def formulas_in(fragment: str) -> list[tuple[str, bool]]:
    return [(html.unescape(m.group(3)), m.group(2) == "display") for m in MATH_RE.finditer(fragment)]


def substitute(fragment: str, rendered: dict[tuple[str, bool], str | None]) -> str:
    """Replace each math element's TeX by its KaTeX HTML (marked data-rendered, so the page script skips it)."""

    def one(match: re.Match[str]) -> str:
        tag, kind, escaped = match.groups()
        out = rendered.get((html.unescape(escaped), kind == "display"))
        if out is None:
            return f'<{tag} class="math {kind} math-error" title="KaTeX could not render this">{escaped}</{tag}>'
        return f'<{tag} class="math {kind}" data-rendered="1">{out}</{tag}>'

    return MATH_RE.sub(one, fragment)


# Fonts ###################################################################
# katex.min.css names each font family in @font-face rules and applies it through class selectors. Pre-rendered
# math tells which classes occur, so only the families it uses are inlined (KaTeX_Main always: .katex uses it).

_FACE_RE = re.compile(r"@font-face\{[^}]*\}")
_URL_RE = re.compile(r"url\((fonts/[^)]+\.woff2)\)")
_FAMILY_RE = re.compile(r"font-family:\s*(KaTeX_[A-Za-z0-9]+)")
_RULE_RE = re.compile(r"([^{}@]+)\{([^{}]*)\}")


def font_families_for(css: str, classes: set[str]) -> set[str]:
    """KaTeX font families that the given set of class names can use (a superset is fine; a subset is not)."""
    css = _FACE_RE.sub("", css)
    families = {"KaTeX_Main"}
    for selector_list, body in _RULE_RE.findall(css):
        named = _FAMILY_RE.findall(body)
        if not named:
            continue
        for selector in selector_list.split(","):
            last = re.split(r"[\s>+~]+", selector.strip())[-1]
            needed = set(re.findall(r"\.([A-Za-z0-9_-]+)", last))
            if needed <= classes:
                families.update(named)
    return families


def katex_css(css: str, *, families: set[str] | None, font_url: Callable[[Path], str]) -> str:
    """katex.min.css with its fonts inlined through font_url; families=None keeps every @font-face."""

    def face(match: re.Match[str]) -> str:
        rule = match.group(0)
        family = _FAMILY_RE.search(rule)
        if families is not None and family is not None and family.group(1) not in families:
            return ""
        return _URL_RE.sub(lambda m: f"url({font_url(KATEX_DIR / m.group(1))})", rule)

    return _FACE_RE.sub(face, css)


CLASS_RE = re.compile(r'class="([^"]+)"')


def classes_in(fragment: str) -> set[str]:
    found: set[str] = set()
    for value in CLASS_RE.findall(fragment):
        found.update(value.split())
    return found
