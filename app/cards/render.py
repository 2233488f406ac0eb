"""Card markdown -> HTML fragments (math left for KaTeX, code highlighted by Pygments)."""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from app.cards.model import LANGS, Card
from app.cards.parser import parse_fence_info

_FORMATTER = HtmlFormatter(nowrap=True)

# What a claimed outcome means, for the caption under an example.
CLAIM_LABELS = {
    "ok": ("运行成功，断言成立", "runs; its assertions hold"),
    "inplace_version_error": ("反向传播时抛出版本计数器错误", "raises the version-counter error"),
    "leaf_inplace_error": ("抛出叶子张量原地操作错误", "raises the leaf in-place error"),
    "view_inplace_error": ("抛出视图原地操作错误", "raises the view in-place error"),
    "memory_overlap_error": ("抛出内存重叠错误", "raises the memory-overlap error"),
    "runtime_error": ("抛出其他运行时错误", "raises another error"),
}


def _highlight(code: str, lang: str, _attrs: str) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        return html.escape(code)
    return highlight(code, lexer, _FORMATTER)


def _fence(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    lang, attrs = parse_fence_info(token.info)
    body = _highlight(token.content, lang, "")
    claim = attrs.get("expect")
    caption = ""
    if claim in CLAIM_LABELS:
        zh, en = CLAIM_LABELS[claim]
        line = f" · line {attrs['line']}" if "line" in attrs else ""
        caption = (
            f'<figcaption class="claim claim-{claim}"><span lang="zh" class="l-zh">断言：{zh}</span>'
            f'<span lang="en" class="l-en">Claim: {en}{line}</span> <code>{claim}</code></figcaption>'
        )
    return f'<figure class="code"><pre class="highlight"><code class="language-{html.escape(lang)}">{body}</code></pre>{caption}</figure>\n'


def _math_inline(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return f'<span class="math inline">{html.escape(tokens[idx].content)}</span>'


def _math_block(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return f'<div class="math display">{html.escape(tokens[idx].content)}</div>\n'


def make_renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).use(dollarmath_plugin, double_inline=True).enable("table")
    md.add_render_rule("fence", _fence)
    md.add_render_rule("math_inline", _math_inline)
    md.add_render_rule("math_inline_double", _math_block)
    md.add_render_rule("math_block", _math_block)
    md.add_render_rule("math_block_label", _math_block)
    return md


_MD = make_renderer()


def to_html(markdown: str) -> str:
    return _MD.render(markdown) if markdown.strip() else ""


def to_inline_html(markdown: str) -> str:
    return _MD.renderInline(markdown)


def render_card(card: Card) -> dict[str, Any]:
    """Everything a page needs, as JSON-able HTML strings keyed by section and language."""
    sections = {
        key: {"shared": to_html(s.shared), **{lang: to_html(s.text.get(lang)) for lang in LANGS}}
        for key, s in card.sections.items()
        if key != "followups"
    }
    followups = [
        {
            "key": f.key,
            "question": {lang: to_inline_html(f.question.get(lang)) for lang in LANGS},
            "answer": {lang: to_html(f.answer.get(lang)) for lang in LANGS},
        }
        for f in card.followups
    ]
    return {"sections": sections, "followups": followups}


def plain_text(card: Card, lang: str) -> str:
    """The card's searchable text in one language (markdown source is close enough to plain text)."""
    parts = [card.title.get(lang)]  # type: ignore[arg-type]
    for key, section in card.sections.items():
        if key != "followups":
            parts.append(section.text.get(lang))  # type: ignore[arg-type]
    for f in card.followups:
        parts += [f.question.get(lang), f.answer.get(lang)]  # type: ignore[arg-type]
    return "\n".join(parts)
