"""One console or log line with the times it carries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Line:
    source: str  # file:line, for evidence
    text: str
    host_s: float | None = None  # from the recording's time base
    kernel_s: float | None = None  # printk time: from the kernel's first message
