"""The corpus run as Markdown, for docs/results.md: verdicts by reason with counts, the share of the
dynamically linked PIE programs the daemon served, how the launches compared, and every difference."""

from __future__ import annotations

from collections import Counter
from typing import IO

from headstart.corpus.launch import Outcome
from headstart.corpus.run import ProgramResult
from headstart.reporters.check import reason_kind

# headstartd's reasons for programs that are not dynamically linked PIE programs of this machine at
# all (or not programs it could find and read).
NOT_DYNAMIC_PIE = ("statically linked", "static PIE", "not position-independent (ET_EXEC)", "cannot find",
                   "not executable", "not an ELF file", "built for another architecture")  # fmt: skip


def is_dynamic_pie(r: ProgramResult) -> bool:
    return not (r.outcome == "exec" and reason_kind(r.why).startswith(NOT_DYNAMIC_PIE))


def verdict_rows(results: list[ProgramResult]) -> list[tuple[str, int]]:
    rows = Counter()
    for r in results:
        if r.outcome == "served":
            rows[f"served ({r.served_mode})"] += 1
        else:
            rows[f"{r.outcome}: {reason_kind(r.why)}"] += 1
    return sorted(rows.items(), key=lambda kv: (not kv[0].startswith("served"), -kv[1], kv[0]))


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return f"line {i + 1}: exec `{x[:80]!r}`, served `{y[:80]!r}`"
    return f"exec has {len(la)} lines, served {len(lb)}"


def describe(exec_run: Outcome, served_run: Outcome) -> str:
    parts = []
    if exec_run.status != served_run.status:
        parts.append(f"exit status {exec_run.status} by exec, {served_run.status} served")
    for name in ("stdout", "stderr"):
        a, b = getattr(exec_run, name), getattr(served_run, name)
        if a != b:
            parts.append(f"{name} {first_difference(a, b)}")
    return "; ".join(parts)


def render(results: list[ProgramResult], file: IO[str]) -> None:
    total = len(results)
    print("| verdict | programs | share |\n|---|---:|---:|", file=file)
    for label, n in verdict_rows(results):
        print(f"| {label} | {n} | {100 * n / total:.1f}% |", file=file)
    pie = [r for r in results if is_dynamic_pie(r)]
    measured = [r for r in pie if r.outcome != "skipped"]
    served = sum(r.outcome == "served" for r in measured)
    print(f"\n{total} programs; {len(pie)} dynamically linked PIE, of which {len(pie) - len(measured)} skipped; "
          f"the daemon started {served} of the other {len(measured)} "
          f"({100 * served / max(1, len(measured)):.1f}%) for every launch.", file=file)  # fmt: skip
    launches = [x for r in results for x in r.launches]
    counts = Counter(x.result for x in launches)
    print("\n| launches (each both ways) | count |\n|---|---:|", file=file)
    for result in ("same", "differs", "varies", "timeout", "declined"):
        print(f"| {result} | {counts[result]} |", file=file)
    stopped = sorted({r.path for r in results for x in r.launches if x.result == "timeout"})
    left = sorted({r.path for r in results for x in r.launches if x.exec_run.left_running or x.served_run.left_running})
    if stopped:
        print(f"\nStopped after the timeout (hangs, waits for input or a peer): {', '.join(stopped)}.", file=file)
    if left:
        print(f"\nLeft processes running after they ended (stopped by the run): {', '.join(left)}.", file=file)
    differences = [(r, x) for r in results for x in r.launches if x.result == "differs"]
    print(f"\nDifferences between served and exec ({len(differences)}):", file=file)
    for r, x in differences:
        print(f"- `{r.path} {x.case}`: {describe(x.exec_run, x.served_run)}", file=file)
    varies = sorted({f"`{r.path} {x.case}`" for r in results for x in r.launches if x.result == "varies"})
    if varies:
        why = "exec gave another output too, or a served run gave one of exec's"
        print(f"\nVaries by exec ({why}), so not counted: {', '.join(varies)}.", file=file)
