"""What a console line says once the terminal's escapes are gone, and where the kernel's printk
stamp is in it: firmware or a program may leave text without a newline just before a kernel line
(`Starting kernel ...[    0.000000] Linux version`), which is two lines on one."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves), two-byte escapes, and the control characters left over;
# and what systemd leaves of a colour's end when it shortens a unit's name to the console's width
# ("device-app-agent.s…0m - app opener": the escape's first bytes cut with the name).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[0-Z\\-~]|[\x00-\x08\x0b-\x1f\x7f]|(?<=…)\[?[0-9;]+m")
# dmesg -d adds the time since the line before: "[    1.234567 <    0.000120>] text".
_AT_START = re.compile(r"^\s*\[\s*(\d+\.\d+)(?:\s*<\s*\d+\.\d+>)?\]\s?(.*)$")
# Mid-line only printk's own form, six decimals, so that "[  OK  ]" or "[mem 0x...]" never match.
_INSIDE = re.compile(r"\[\s*(\d+\.\d{6})\]\s?(.*)$")


def clean(text: str) -> str:
    return _ESCAPES.sub("", text)


def split_printk(text: str) -> tuple[str, float | None, str]:
    """(text before the stamp, printk seconds, text after); (text, None, "") without a stamp."""
    if m := _AT_START.match(text):
        return "", float(m.group(1)), m.group(2)
    if m := _INSIDE.search(text):
        return text[: m.start()].rstrip(), float(m.group(1)), m.group(2)
    return text, None, ""
