"""The corpus run: the daemon's verdict on every program, then each served one launched both ways
per case, in batches that each have a daemon of their own."""

from __future__ import annotations

import os
import pwd
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstart.corpus.cases import FILTER, HELP, SKIPPED, VERSION, Case, is_filter
from headstart.corpus.daemons import batch_daemon
from headstart.corpus.launch import Identity, Outcome, run_exec, run_served
from headstart.daemon import RunningDaemon
from headstart.errors import HeadstartError
from headstart.verdicts import judge_many

# Programs per daemon: their libraries all load in one zygote, which stays small enough to fork fast.
BATCH = 25


@dataclass
class Launch:
    case: str
    result: str  # same, differs, varies (two runs by exec differ), timeout, declined
    exec_run: Outcome
    served_run: Outcome

    def summary(self) -> dict[str, Any]:
        def one(o: Outcome) -> dict[str, Any]:
            text = {name: getattr(o, name).decode(errors="backslashreplace")[:2000] for name in ("stdout", "stderr")}
            return {"status": o.status, **text, "left_running": o.left_running}

        return {"case": self.case, "result": self.result, "exec": one(self.exec_run), "served": one(self.served_run)}


@dataclass
class ProgramResult:
    path: str
    verdict: dict[str, Any]  # headstartd --check's
    outcome: str = ""  # served, exec (the daemon's verdict), declined (at launch), skipped, not started
    why: str = ""
    served_mode: str = ""
    launches: list[Launch] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "verdict": self.verdict, "outcome": self.outcome, "why": self.why,
                "served_mode": self.served_mode, "launches": [x.summary() for x in self.launches]}  # fmt: skip


@dataclass
class Settings:
    timeout: float = 10.0
    batch: int = BATCH
    who: Identity = field(default_factory=Identity)
    register: str = "--warm"  # or --app: how each batch's daemon registers its programs


def unprivileged() -> Identity:
    """nobody when we are root (see Identity), else ourselves."""
    if os.geteuid() != 0:
        return Identity()
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        raise HeadstartError("the corpus run as root needs the user 'nobody' to launch the programs as") from None
    return Identity(user.pw_uid, user.pw_gid)


def environment(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home), "LC_ALL": "C.UTF-8",
            "TZ": "UTC", "USER": "corpus", "LOGNAME": "corpus"}  # fmt: skip


# How many more runs each way a difference gets before it counts.
RETRIES = 3


def judge_difference(
    daemon: RunningDaemon, argv: list[str], case: Case, env: dict[str, str], s: Settings, first: tuple[Outcome, Outcome]
) -> str:
    """A program whose output changes from one run to the next (a time, a process ID, the order in
    which its children write: groff's subprograms) is not told apart from a served one that differs:
    a difference counts when exec gives its first result every time and no served run gives it."""
    by_exec, served = first
    execs, serveds = [by_exec], [served]
    for _ in range(RETRIES):
        execs.append(run_exec(argv, case.stdin, env, s.who, s.timeout))
        serveds.append(run_served(daemon, argv, case.stdin, env, s.who, s.timeout))
        if any(e.same_as(x) for e in execs for x in serveds):
            return "varies"
    return "differs" if all(by_exec.same_as(e) for e in execs) else "varies"


def compare(daemon: RunningDaemon, path: str, case: Case, env: dict[str, str], s: Settings) -> Launch:
    argv = [path, *case.args]
    by_exec = run_exec(argv, case.stdin, env, s.who, s.timeout)
    served = run_served(daemon, argv, case.stdin, env, s.who, s.timeout)
    if served.served is None:
        result = "declined"
    elif by_exec.status is None or served.status is None:
        result = "timeout"
    elif by_exec.same_as(served):
        result = "same"
    else:
        result = judge_difference(daemon, argv, case, env, s, (by_exec, served))
    return Launch(case.label, result, by_exec, served)


def launch_program(daemon: RunningDaemon, r: ProgramResult, env: dict[str, str], s: Settings) -> None:
    for case in (VERSION, HELP):
        r.launches.append(compare(daemon, r.path, case, env, s))
    helped = r.launches[-1].exec_run
    if is_filter(helped.stdout, helped.stderr):
        r.launches.append(compare(daemon, r.path, FILTER, env, s))
    declined = [x for x in r.launches if x.result == "declined"]
    if declined:
        r.outcome, r.why = "declined", declined[0].served_run.declined or "no launch in the daemon's log"
    else:
        r.outcome, r.served_mode = "served", r.launches[0].served_run.served or ""


def run_batch(batch: list[ProgramResult], env: dict[str, str], s: Settings) -> None:
    try:
        with batch_daemon([r.path for r in batch], s.who, register=s.register) as daemon:
            for r in batch:
                launch_program(daemon, r, env, s)
    except HeadstartError as e:
        if len(batch) > 1:  # one program the daemon cannot load stops the whole batch: find it
            for r in batch:
                r.launches.clear()
                run_batch([r], env, s)
        else:
            batch[0].outcome, batch[0].why = "not started", str(e).splitlines()[0]


def run_corpus(programs: list[str], s: Settings, advance: Callable[[str, int], None]) -> list[ProgramResult]:
    verdicts, _ = judge_many(programs, lambda n: advance("check", n))
    results = [ProgramResult(v.get("path") or v["program"], v) for v in verdicts]
    todo = []
    for r in results:
        name = os.path.basename(r.path)
        if r.verdict["mode"] == "exec":
            r.outcome, r.why = "exec", r.verdict["reason"] or ""
        elif name in SKIPPED:
            r.outcome, r.why = "skipped", SKIPPED[name]
        else:
            todo.append(r)
    with tempfile.TemporaryDirectory(prefix="headstart-corpus-") as tmp:
        os.chmod(tmp, 0o755)
        env = environment(Path(tmp) / "home")
        for start in range(0, len(todo), s.batch):
            batch = todo[start : start + s.batch]
            run_batch(batch, env, s)
            advance("launch", len(batch))
    return results
