"""Synthetic, valid cards for benchmarks and load tests (shared so every bench measures the same deck)."""

from __future__ import annotations

import random
from pathlib import Path

_WORDS_EN = "gradient tensor version counter saved view leaf graph backward forward memory inplace activation".split()
_WORDS_ZH = "梯度 张量 版本 计数器 保存 视图 叶子 计算图 反向 前向 显存 原地 激活".split()


def _sentence(rng: random.Random, words: list[str], n: int, sep: str) -> str:
    return sep.join(rng.choice(words) for _ in range(n))


def synthetic_card(index: int, *, n_cards: int, rng: random.Random) -> str:
    card_id = f"synthetic-{index:05d}"
    related = sorted({f"synthetic-{rng.randrange(n_cards):05d}" for _ in range(3)} - {card_id})
    topic = index % 10

    def bi(n: int) -> str:
        return f"### zh\n{_sentence(rng, _WORDS_ZH, n, '')}。\n\n### en\n{_sentence(rng, _WORDS_EN, n, ' ')}.\n"

    followups = "\n".join(
        f"### q{k}\n\n#### zh\n**问：** {_sentence(rng, _WORDS_ZH, 6, '')}？\n\n**答：** {_sentence(rng, _WORDS_ZH, 30, '')}。\n\n"
        f"#### en\n**Q:** {_sentence(rng, _WORDS_EN, 8, ' ')}?\n\n**A:** {_sentence(rng, _WORDS_EN, 40, ' ')}.\n"
        for k in range(3)
    )
    return f"""---
id: {card_id}
title:
  zh: 合成卡片 {index}
  en: Synthetic card {index}
module:
  id: m9
  zh: M9 合成模块
  en: M9 Synthetic module
topic:
  id: topic-{topic}
  zh: 主题 {topic}
  en: Topic {topic}
difficulty: {rng.choice(["easy", "medium", "hard"])}
tags: [synthetic, t{topic}]
related: [{", ".join(related)}]
---

## Answer

{bi(12)}
## Key insights

### zh
- {_sentence(rng, _WORDS_ZH, 10, '')}
- {_sentence(rng, _WORDS_ZH, 10, '')}

### en
- {_sentence(rng, _WORDS_EN, 12, ' ')}
- {_sentence(rng, _WORDS_EN, 12, ' ')}

## Math

$$
\\frac{{\\partial L}}{{\\partial x_{{{index}}}}} = \\sum_i v_i J_{{i}}
$$

{bi(20)}
## Trade-offs

{bi(40)}
## Pitfalls

{bi(30)}
## Follow-ups

{followups}
## Examples

```python expect=ok
import torch
x = torch.ones({index % 5 + 1}, requires_grad=True)
(x * {index}).sum().backward()
assert torch.all(x.grad == {index})
```

{bi(15)}"""


def write_synthetic_deck(cards_dir: Path, n_cards: int, *, seed: int = 0) -> list[Path]:
    """Write n_cards valid cards under cards_dir/m9/topic-k/; return their paths."""
    rng = random.Random(seed)
    paths = []
    for i in range(n_cards):
        path = cards_dir / "m9" / f"topic-{i % 10}" / f"synthetic-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(synthetic_card(i, n_cards=n_cards, rng=rng), encoding="utf-8")
        paths.append(path)
    return paths
