"""`headstart check` in the terminal: a table of the daemon's verdicts and how many it serves, or
the verdicts as JSON lines, as headstartd gives them."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import IO, Any

from rich.table import Table
from rich.text import Text

from headstart.reporters import terminal


def shown(text: str) -> str:
    """A path (or a reason naming one) for the terminal: a byte that is not UTF-8 as \\xff."""
    return os.fsencode(text).decode(errors="backslashreplace")


def prepared(verdict: dict[str, Any]) -> str:
    """Whether --prepare-display would start its toolkit ahead; for a program that links none (or is
    exec'd), nothing."""
    toolkit = verdict.get("toolkit")
    if toolkit in (None, "none"):
        return ""
    reason, only = verdict.get("prepare_display_reason"), verdict.get("prepare_display_only")
    if reason is not None:
        return f"no: {reason}"
    return f"yes ({toolkit}, {only})" if only else f"yes ({toolkit})"


def render(verdicts: list[dict[str, Any]], file: IO[str]) -> None:
    with_toolkit = any(prepared(v) for v in verdicts)
    # On a narrow terminal the reasons wrap over several lines: rules between the rows keep each
    # program's apart, and a path folds rather than losing its end (the program's name).
    wraps = with_toolkit or any(v["mode"] != "warm" for v in verdicts)
    table = Table(show_lines=wraps)
    table.add_column("program", overflow="fold")
    table.add_column("served", no_wrap=True)
    table.add_column("why", overflow="fold")
    if with_toolkit:
        table.add_column("--prepare-display", overflow="fold")
    for v in verdicts:
        if v["mode"] == "exec":
            served, why = "[red]no, exec[/red]", v["reason"]
        elif v["mode"] == "warm":
            served, why = "[green]preload, warm[/green]", ""
        else:
            served, why = "[yellow]preload[/yellow]", f"not warm: {v['warm_reason']}"
        row = [Text(shown(v.get("path") or v["program"])), served, Text(shown(why))]
        table.add_row(*row, *([Text(shown(prepared(v)))] if with_toolkit else []))
    terminal.console(file).print(table)
    served = sum(v["mode"] != "exec" for v in verdicts)
    print(f"{served} of {len(verdicts)} served; any served program can also start from a pool (--pool N)", file=file)
    # What a new user took for the daemon's word on any launch (a trial): it is for registered ones.
    print(
        "as registered with --app or --warm; unregistered, a program is served only when the daemon has "
        "its libraries loaded, and a launch from a terminal only with headstart-run --terminal",
        file=file,
    )


def reason_kind(reason: str) -> str:
    """A reason without what is particular to one program: headstartd's reasons say that after their
    first colon, so the programs refused for the same reason count together."""
    return reason.split(": ", 1)[0]


def render_summary(verdicts: list[dict[str, Any]], file: IO[str]) -> None:
    """How many programs get each verdict, and each reason for exec, most programs first."""
    modes = Counter(v["mode"] for v in verdicts)
    reasons = Counter(reason_kind(v["reason"] or "") for v in verdicts if v["mode"] == "exec")
    table = Table(title=f"{len(verdicts)} programs", show_lines=False)
    table.add_column("verdict")
    table.add_column("programs", justify="right")
    table.add_column("share", justify="right")
    for label, count in [("served warm", modes["warm"]), ("served, preload only", modes["preload"])] + [
        (f"exec: {shown(r)}", n) for r, n in reasons.most_common()
    ]:
        if count:
            table.add_row(Text(label), str(count), f"{100 * count / len(verdicts):.0f}%")
    terminal.console(file).print(table)


def render_json(verdicts: list[dict[str, Any]], file: IO[str]) -> None:
    for v in verdicts:
        print(json.dumps(v), file=file)


def render_missing(verdicts: list[dict[str, Any]], file: IO[str]) -> None:
    """The programs headstartd could not find (no path in their verdict)."""
    for v in verdicts:
        if v.get("path") is None:
            # A path given is not there; a name was not found on PATH.
            hint = "no such file" if "/" in v["program"] else "give a path or put it on PATH"
            print(f"headstart: cannot find {shown(v['program'])}: {hint}", file=file)
