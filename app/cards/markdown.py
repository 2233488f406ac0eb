"""The one markdown-it configuration: cards are parsed and rendered with the same rules."""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound


def parse_fence_info(info: str) -> tuple[str, dict[str, str]]:
    """'python expect=ok line=3' -> ('python', {'expect': 'ok', 'line': '3'})."""
    words = info.split()
    lang = words[0].lower() if words else ""
    attrs = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    return lang, attrs


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


@lru_cache(maxsize=32)
def _lexer(lang: str) -> Lexer | None:
    try:
        return get_lexer_by_name(lang or "text")
    except ClassNotFound:
        return None


def _highlight(code: str, lang: str, _attrs: str) -> str:
    lexer = _lexer(lang)
    return html.escape(code) if lexer is None else highlight(code, lexer, _FORMATTER)


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


def make_markdown() -> MarkdownIt:
    md = (
        MarkdownIt("commonmark", {"html": False, "linkify": False})
        .use(front_matter_plugin)
        .use(dollarmath_plugin, double_inline=True)
        .enable("table")
    )
    md.add_render_rule("fence", _fence)
    md.add_render_rule("math_inline", _math_inline)
    md.add_render_rule("math_inline_double", _math_block)
    md.add_render_rule("math_block", _math_block)
    md.add_render_rule("math_block_label", _math_block)
    return md


MD = make_markdown()


