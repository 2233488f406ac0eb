"""YAML front matter -> (fields, the file line of every key) or a located error; shared by cards and challenges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster when present


@dataclass(frozen=True)
class FrontMatter:
    data: dict[str, Any] | None
    # "key" -> file line; nested keys as "parent.key" and list items as "parent.0" (inputs.x, choices.1 ...)
    key_lines: dict[str, int] = field(default_factory=dict)
    error: tuple[int, str] | None = None  # (file line, message) when the YAML is unusable


def load_front_matter(source: str) -> FrontMatter:
    """Parse the YAML between the opening and closing '---' (it starts on file line 2)."""
    loader = _YamlLoader(source)
    try:
        # One pass: the node tree gives each key's line, and the data is built from the same tree.
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return FrontMatter(None, error=(mark.line + 2 if mark is not None else 1, f"malformed YAML front matter: {exc.problem or exc}"))
    except yaml.YAMLError as exc:
        return FrontMatter(None, error=(1, f"malformed YAML front matter: {exc}"))
    finally:
        loader.dispose()
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        return FrontMatter(None, error=(1, "front matter must be a YAML mapping of fields"))
    lines: dict[str, int] = {}

    def walk(n: yaml.Node, prefix: str) -> None:
        if isinstance(n, yaml.MappingNode):
            for key, value in n.value:
                if isinstance(key, yaml.ScalarNode):
                    name = f"{prefix}{key.value}"
                    lines.setdefault(name, key.start_mark.line + 2)
                    walk(value, name + ".")
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                lines.setdefault(f"{prefix}{i}", item.start_mark.line + 2)
                walk(item, f"{prefix}{i}.")

    walk(node, "")
    return FrontMatter(data, lines)
