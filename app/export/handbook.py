"""The offline handbook: every selected card in one HTML file that needs nothing else.

Styles, scripts, fonts and images are inlined, each exactly once (Assets refuses a second copy); math is
pre-rendered by KaTeX at export time (app/export/math.py), so the file renders with scripts off too. Links
between cards are #fragments within the file.
"""

from __future__ import annotations

import base64
import hashlib
import html
import logging
import mimetypes
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from sqlmodel import Session

from app.cards import queries
from app.cards.model import SECTION_NAMES_ZH, SECTIONS
from app.export import math
from app.export.common import Progress, Selection, no_progress, select_cards
from app.models import CardRow
from app.templating import STATIC_DIR, TEMPLATES_DIR, difficulty_badge

log = logging.getLogger(__name__)

HandbookLang = Literal["zh", "en", "both"]
LANGS: tuple[HandbookLang, ...] = ("zh", "en", "both")
EXPORT_STATIC = STATIC_DIR / "export"


@dataclass
class HandbookReport:
    """Sizes in bytes (UTF-8): the whole file, the inlined assets, and each card's own HTML."""

    total_bytes: int = 0
    assets: dict[str, int] = field(default_factory=dict)  # name -> bytes as inlined
    card_bytes: dict[str, int] = field(default_factory=dict)  # card id -> bytes of its <article>
    math_prerendered: bool = True
    formulas: int = 0

    @property
    def cards(self) -> int:
        return len(self.card_bytes)

    @property
    def asset_bytes(self) -> int:
        return sum(self.assets.values())

    @property
    def bytes_per_card(self) -> float:
        return sum(self.card_bytes.values()) / max(1, self.cards)

    def summary(self) -> str:
        largest = sorted(self.card_bytes.items(), key=lambda kv: -kv[1])[:3]
        math_note = "math pre-rendered" if self.math_prerendered else "math rendered in the page (node not found)"
        return (
            f"{self.cards} cards, {_kb(self.total_bytes)} in all: {_kb(self.asset_bytes)} of inlined assets "
            f"({len(self.assets)}, each once), {_kb(self.bytes_per_card)} per card on average "
            f"(largest: {', '.join(f'{cid} {_kb(n)}' for cid, n in largest)}); {self.formulas} formulas, {math_note}"
        )


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MB"


@dataclass
class Handbook:
    html: str
    report: HandbookReport


class DuplicateAsset(RuntimeError):
    pass


class Assets:
    """Everything inlined into the file, keyed by content hash: inlining the same bytes twice is a bug."""

    def __init__(self, report: HandbookReport) -> None:
        self._seen: dict[str, str] = {}
        self._report = report

    def _register(self, name: str, data: bytes, inlined_size: int) -> None:
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._seen:
            raise DuplicateAsset(f"{name} has the same content as {self._seen[digest]}, which is already inlined")
        self._seen[digest] = name
        self._report.assets[name] = inlined_size

    def text(self, path: Path, *, name: str | None = None) -> str:
        data = path.read_bytes()
        self._register(name or _rel(path), data, len(data))
        return data.decode("utf-8")

    def data_url(self, path: Path, *, name: str | None = None) -> str:
        data = path.read_bytes()
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if path.suffix == ".woff2":
            mime = "font/woff2"
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        self._register(name or _rel(path), data, len(url))
        return url

    def seen(self, data: bytes) -> bool:
        return hashlib.sha256(data).hexdigest() in self._seen


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(STATIC_DIR))
    except ValueError:
        return path.name


# Templates ###############################################################


def _environment(lang: HandbookLang) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def bi(zh: Any, en: Any, tag: str = "span") -> Markup:
        """Both languages (CSS toggles them), or only the exported one."""
        parts = []
        if lang != "en":
            parts.append(Markup('<{t} class="l-zh" lang="zh">{x}</{t}>').format(t=Markup(tag), x=zh))
        if lang != "zh":
            parts.append(Markup('<{t} class="l-en" lang="en">{x}</{t}>').format(t=Markup(tag), x=en))
        return Markup("").join(parts)

    env.globals.update(bi=bi, difficulty_badge=difficulty_badge)
    return env


# Card HTML fix-ups #######################################################

_IMG_RE = re.compile(r"<img\s+([^>]*?)\s*/?>")
_ATTR_RE = re.compile(r'(\w+)="([^"]*)"')
_CARD_HREF_RE = re.compile(r'href="/cards/([a-z0-9-]+)"')


class _Images:
    """Local images become one CSS rule each (content: url(data:…)), so an image shown by many cards is inlined once."""

    def __init__(self, assets: Assets, cards_root: Path | None) -> None:
        self.assets = assets
        self.cards_root = cards_root
        self.rules: dict[str, str] = {}  # class -> css rule

    def fix(self, fragment: str, card: CardRow) -> str:
        if "<img" not in fragment:
            return fragment
        return _IMG_RE.sub(lambda m: self._one(m, card), fragment)

    def _one(self, match: re.Match[str], card: CardRow) -> str:
        attrs = dict(_ATTR_RE.findall(match.group(1)))
        src, alt = html.unescape(attrs.get("src", "")), attrs.get("alt", "")
        path = self._resolve(src, card)
        if path is None:
            # Never fetch: a remote or missing image becomes a link, which makes no request until clicked.
            return f'<a class="image-link" href="{html.escape(src)}">{alt or html.escape(src)}</a>'
        data = path.read_bytes()
        cls = "img-" + hashlib.sha256(data).hexdigest()[:16]
        if cls not in self.rules:
            url = self.assets.data_url(path, name=f"image {path.name}")
            self.rules[cls] = f"img.{cls}{{content:url({url})}}"
        return f'<img class="{cls}" alt="{alt}">'

    def _resolve(self, src: str, card: CardRow) -> Path | None:
        if not src or self.cards_root is None or re.match(r"^[a-z][a-z0-9+.-]*:", src, re.I) or src.startswith("/"):
            return None
        path = (self.cards_root.parent / card.path).parent / src
        try:
            path = path.resolve(strict=True)
        except OSError:
            return None
        return path if path.is_file() and path.is_relative_to(self.cards_root.resolve()) else None

    def css(self) -> str:
        return "\n".join(self.rules.values())


# Building ################################################################


def build_handbook(
    session: Session,
    *,
    selection: Selection = Selection(),
    lang: HandbookLang = "both",
    now: datetime,
    cards_root: Path | None = None,
    prerender_math: bool | None = None,
    progress: Progress = no_progress,
) -> Handbook:
    """The handbook for the selected cards; cards_root (the cards folder) lets local images be inlined."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}")
    cards = select_cards(session, selection=selection)
    report = HandbookReport()
    assets = Assets(report)
    images = _Images(assets, cards_root)
    env = _environment(lang)
    card_template = env.get_template("export/_card.html")
    sections = [(key, SECTIONS[key], SECTION_NAMES_ZH[key]) for key in SECTIONS]
    here = {card.id: card for card in cards}
    elsewhere = {
        c.id: c
        for c in queries.cards_by_id(session, ids=sorted({r for card in cards for r in card.related} - set(here)))
    }
    backlinks: dict[str, list[CardRow]] = defaultdict(list)
    for card in cards:
        for target in dict.fromkeys(card.related):
            if target in here:
                backlinks[target].append(card)

    articles: list[str] = []
    total = len(cards)
    for done, card in enumerate(cards, start=1):
        related = [
            {"id": rid, "title_zh": other.title_zh, "title_en": other.title_en, "here": rid in here}
            for rid in card.related
            if (other := here.get(rid) or elsewhere.get(rid)) is not None
        ]
        fragment = card_template.render(
            card=card,
            sections=sections,
            related=related,
            backlinks=backlinks.get(card.id, []),
            show_zh=lang != "en",
            show_en=lang != "zh",
        )
        fragment = _CARD_HREF_RE.sub(lambda m: f'href="#{m.group(1)}"', images.fix(fragment, card))
        articles.append(fragment)
        if done % 50 == 0 or done == total:
            progress(done, total)

    formulas = [f for article in articles for f in math.formulas_in(article)]
    report.formulas = len(formulas)
    prerender = math.node_available() if prerender_math is None else prerender_math
    rendered: dict[tuple[str, bool], str | None] = {}
    if prerender and formulas:
        try:
            rendered = math.render_many(formulas)
        except (RuntimeError, OSError, ValueError) as exc:
            log.warning("could not pre-render math (%s); the handbook will render it in the page", exc)
            prerender = False
    report.math_prerendered = prerender or not formulas
    if prerender and formulas:
        articles = [math.substitute(article, rendered) for article in articles]
    for card, article in zip(cards, articles):
        report.card_bytes[card.id] = len(article.encode("utf-8"))

    katex_name = "vendor/katex-0.19.1/katex.min.css"
    katex_source = assets.text(math.KATEX_DIR / "katex.min.css", name=katex_name)
    if prerender:
        classes: set[str] = set()
        for article in articles:
            if "katex" in article:
                classes |= math.classes_in(article)
        families: set[str] | None = math.font_families_for(katex_source, classes)
    else:
        families = None  # rendered in the page: any font may be needed
    styles = [
        math.katex_css(katex_source, families=families, font_url=lambda p: assets.data_url(p)),
        assets.text(STATIC_DIR / "app.css"),
        assets.text(EXPORT_STATIC / "handbook.css"),
    ]
    fonts = sum(size for name, size in report.assets.items() if name.endswith(".woff2"))
    report.assets[katex_name] = len(styles[0]) - fonts
    if images.rules:
        styles.append(images.css())
    scripts = [] if prerender else [_script(assets.text(math.KATEX_DIR / "katex.min.js"))]
    scripts.append(_script(assets.text(EXPORT_STATIC / "handbook.js")))

    title = "DepthCards handbook · 深度学习面试手册"
    if selection.module or selection.topic:
        first = cards[0]
        title += " · " + (first.topic_en if selection.topic else first.module_en)
    page = env.get_template("export/handbook.html").render(
        lang=lang,
        title=title,
        favicon=assets.data_url(STATIC_DIR / "favicon.svg"),
        styles=[_style(css) for css in styles],
        scripts=scripts,
        modules=queries.group_by_module(cards),
        articles=articles,
        count=len(cards),
        exported=now.strftime("%Y-%m-%d"),
    )
    report.total_bytes = len(page.encode("utf-8"))
    return Handbook(html=page, report=report)


def _script(js: str) -> str:
    # An inline script ends at the first "</script"; vendored files don't contain one, but never trust that.
    return re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)


def _style(css: str) -> str:
    return re.sub(r"</(style)", r"<\\/\1", css, flags=re.IGNORECASE)


def handbook_filename(*, selection: Selection, lang: HandbookLang) -> str:
    parts = ["depthcards-handbook"]
    parts += [p for p in (selection.module, selection.topic) if p]
    if lang != "both":
        parts.append(lang)
    return "-".join(parts) + ".html"
