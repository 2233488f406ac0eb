"""The verdict vocabulary shared by card example claims and the sandbox runner.

Classification reads the exception's message, not only its class: torch raises
most autograd misuse as plain RuntimeError, and RecursionError / allocation
failures are RuntimeErrors too.
"""

from __future__ import annotations

import errno
import re
from typing import Final

OK: Final = "ok"
INPLACE_VERSION_ERROR: Final = "inplace_version_error"
LEAF_INPLACE_ERROR: Final = "leaf_inplace_error"
VIEW_INPLACE_ERROR: Final = "view_inplace_error"
MEMORY_OVERLAP_ERROR: Final = "memory_overlap_error"
RUNTIME_ERROR: Final = "runtime_error"
TIMEOUT: Final = "timeout"
MEMORY_LIMIT: Final = "memory_limit"
OUTPUT_LIMIT: Final = "output_limit"
SECURITY_VIOLATION: Final = "security_violation"
INTERNAL_ERROR: Final = "internal_error"

ALL_OUTCOMES: Final = (
    OK,
    INPLACE_VERSION_ERROR,
    LEAF_INPLACE_ERROR,
    VIEW_INPLACE_ERROR,
    MEMORY_OVERLAP_ERROR,
    RUNTIME_ERROR,
    TIMEOUT,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    SECURITY_VIOLATION,
    INTERNAL_ERROR,
)

# Outcomes a snippet can produce by itself, in-process (the rest are imposed by the runner).
SNIPPET_OUTCOMES: Final = (
    OK,
    INPLACE_VERSION_ERROR,
    LEAF_INPLACE_ERROR,
    VIEW_INPLACE_ERROR,
    MEMORY_OVERLAP_ERROR,
    RUNTIME_ERROR,
)

# Ordered: the first pattern that matches wins. Messages checked against torch 2.13.
_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (INPLACE_VERSION_ERROR, re.compile(r"modified by an inplace operation")),
    (VIEW_INPLACE_ERROR, re.compile(r"a view of a leaf Variable that requires grad (is being|has been) used in an in-place")),
    (LEAF_INPLACE_ERROR, re.compile(r"a leaf Variable that requires grad (is being|has been) used in an in-place")),
    (VIEW_INPLACE_ERROR, re.compile(r"is a view and (is being|its base or another view of its base has been) modified inplace")),
    (VIEW_INPLACE_ERROR, re.compile(r"view was created (in no_grad mode|inside a custom Function|in inference mode)")),
    (VIEW_INPLACE_ERROR, re.compile(r"is a view of a leaf Variable|view of a leaf")),
    (MEMORY_OVERLAP_ERROR, re.compile(r"more than one element of the written-to tensor refers to a single memory location")),
    (MEMORY_OVERLAP_ERROR, re.compile(r"unsupported operation: some elements of the input tensor and the written-to tensor")),
    (MEMORY_LIMIT, re.compile(r"can't allocate memory|DefaultCPUAllocator: not enough memory|std::bad_alloc")),
    # Under RLIMIT_AS thread stacks (8 MiB each) run out of address space before anything else.
    (MEMORY_LIMIT, re.compile(r"can't start new thread")),
)

# errno values that mean "a sandbox limit said no" rather than a bug in the snippet.
_ERRNO_OUTCOMES: Final[dict[int, str]] = {
    errno.EFBIG: OUTPUT_LIMIT,  # RLIMIT_FSIZE (Python ignores SIGXFSZ, so the write fails instead)
    errno.ENOSPC: OUTPUT_LIMIT,  # the private tmpfs is full
    errno.EPERM: SECURITY_VIOLATION,  # an operation the sandbox forbids (e.g. replacing the SIGSYS handler)
}


def classify_exception(exc: BaseException) -> str:
    """Map an exception raised by user code to one outcome string."""
    if isinstance(exc, MemoryError):
        return MEMORY_LIMIT
    if isinstance(exc, OSError) and exc.errno in _ERRNO_OUTCOMES:
        return _ERRNO_OUTCOMES[exc.errno]
    message = str(exc)
    for outcome, pattern in _PATTERNS:
        if pattern.search(message):
            return outcome
    return RUNTIME_ERROR
