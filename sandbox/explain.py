"""One plain sentence per verdict, in English and Chinese (pure: no torch, no I/O)."""

from __future__ import annotations

from typing import Any

from sandbox import outcomes


def _en_at(line: int | None) -> str:
    return f" on line {line}" if line else ""


def _zh_at(line: int | None) -> str:
    return f"第 {line} 行" if line else "代码"


def _first_line(text: str, limit: int = 200) -> str:
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _inplace_version(d: dict[str, Any], line: int | None) -> tuple[str, str]:
    shape = d.get("tensor_shape")
    dtype = d.get("tensor_dtype") or "tensor"
    what_en = f"The {dtype} tensor of shape {list(shape)}" if shape is not None else "A tensor"
    what_zh = f"一个形状为 {list(shape)} 的 {dtype} 张量" if shape is not None else "一个张量"
    saved_op, saved_line = d.get("saved_by_op"), d.get("saved_by_line")
    op, mod_line = d.get("inplace_op"), d.get("modified_at_line")
    exp, found = d.get("expected_version"), d.get("found_version")
    versions = f" (version {exp} → {found})" if exp is not None and found is not None else ""
    versions_zh = f"（版本 {exp} → {found}）" if exp is not None and found is not None else ""
    saver_en = f"`{saved_op}`" if saved_op else "a forward op"
    saver_zh = f"`{saved_op}`" if saved_op else "某个前向运算"
    writer_en = f"the in-place `{op}`" if op else "an in-place op"
    writer_zh = f"原地操作 `{op}`" if op else "某个原地操作"
    en = (
        f"{what_en} that {saver_en}{_en_at(saved_line)} saved for backward was overwritten by "
        f"{writer_en}{_en_at(mod_line)}{versions}, so the backward pass{_en_at(line)} cannot compute the gradient."
    )
    saved_zh = f"第 {saved_line} 行的" if saved_line else ""
    mod_zh = f"第 {mod_line} 行的" if mod_line else ""
    zh = (
        f"{saved_zh}{saver_zh}为反向传播保存了{what_zh}，但{mod_zh}{writer_zh}修改了它{versions_zh}，"
        f"所以{_zh_at(line) if line else ''}反向传播无法计算梯度。"
    )
    return en, zh


def sentences(
    outcome: str,
    *,
    line: int | None,
    exception_type: str | None = None,
    message: str = "",
    details: dict[str, Any] | None = None,
    limit_text: str = "",
) -> tuple[str, str]:
    """(English, Chinese) explanation of a verdict."""
    details = details or {}
    if outcome == outcomes.OK:
        return "The code ran without errors.", "代码运行没有出错。"
    if outcome == outcomes.INPLACE_VERSION_ERROR:
        return _inplace_version(details, line)
    if outcome == outcomes.LEAF_INPLACE_ERROR:
        return (
            f"The code{_en_at(line)} modifies a leaf tensor that requires grad in place, which autograd forbids "
            "(do it under torch.no_grad() or use an out-of-place op).",
            f"{_zh_at(line)}原地修改了一个需要梯度的叶子张量，autograd 不允许这样做（放进 torch.no_grad() 或改用非原地操作）。",
        )
    if outcome == outcomes.VIEW_INPLACE_ERROR:
        return (
            f"The code{_en_at(line)} modifies a view in place in a way autograd cannot track; clone() the view first.",
            f"{_zh_at(line)}以 autograd 无法跟踪的方式原地修改了一个视图，请先对视图 clone()。",
        )
    if outcome == outcomes.MEMORY_OVERLAP_ERROR:
        return (
            f"The code{_en_at(line)} writes in place into a tensor whose elements share memory "
            "(such as the result of expand()); clone() it first.",
            f"{_zh_at(line)}原地写入了一个元素共享同一块内存的张量（例如 expand() 的结果），请先 clone()。",
        )
    if outcome == outcomes.TIMEOUT:
        return (
            f"The run was stopped because it exceeded the time limit{limit_text and f' ({limit_text})'}.",
            f"运行超过了时间限制{limit_text and f'（{limit_text}）'}，已被终止。",
        )
    if outcome == outcomes.MEMORY_LIMIT:
        return (
            f"The code{_en_at(line)} tried to use more memory than the sandbox allows{limit_text and f' ({limit_text})'}.",
            f"{_zh_at(line)}尝试使用的内存超过了沙箱的限制{limit_text and f'（{limit_text}）'}。",
        )
    if outcome == outcomes.OUTPUT_LIMIT:
        return (
            f"The run printed or wrote more data than the sandbox allows{limit_text and f' ({limit_text})'}.",
            f"运行输出或写入的数据超过了沙箱的限制{limit_text and f'（{limit_text}）'}。",
        )
    if outcome == outcomes.SECURITY_VIOLATION:
        return (
            f"The code{_en_at(line)} tried something the sandbox forbids "
            "(starting processes, network access, signalling other processes, mounts and the like).",
            f"{_zh_at(line)}尝试了沙箱禁止的操作（创建进程、访问网络、向其他进程发信号、挂载等）。",
        )
    if outcome == outcomes.RUNTIME_ERROR:
        kind = exception_type or "An error"
        text = _first_line(message)
        return (
            f"{kind} was raised{_en_at(line)}{': ' + text if text else '.'}",
            f"{_zh_at(line)}抛出了 {kind}{'：' + text if text else '。'}",
        )
    return (
        "The sandbox could not run the code; this is not a problem with your code.",
        "沙箱未能运行这段代码，这不是你的代码的问题。",
    )
