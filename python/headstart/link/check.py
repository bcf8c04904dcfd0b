"""`headstart link check`: exec launches of a program as it was linked and relinked with the advice
applied, timed to main alternately (launch-timer, round after round, the order rotated), with the
loader's counts for each, the outputs compared, and the same program served warm by a private
headstartd beside them, so that relinking and the daemon can be weighed for the same program."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from headstart.benchmark.display import display_env, private_display
from headstart.daemon import private_daemon
from headstart.errors import HeadstartError
from headstart.link.analysis import analyse, mark_main_env, timer_rows
from headstart.link.collect import count
from headstart.link.objects import read_object
from headstart.link.relink import SAMPLES, relink
from headstart.relocations import closure
from headstart.stats import summarize

SCHEMA = "headstart-link-check 1"
GOAL = 0.70  # exec time to main after / before: the goal, a cut of at least 30%


def output(argv: list[str], ready: re.Pattern[str] | None, timeout: float, env: dict[str, str]) -> bytes:
    """What the program writes (stdout and stderr) and its exit status; up to its ready line if it has one."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines: list[bytes] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if ready and ready.search(line.decode(errors="replace")):
                os.killpg(proc.pid, signal.SIGTERM)
                break
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
    if ready is not None:
        status = 0
    return b"".join(lines) + f"\n[exit status {status}]".encode()


def counts(argv: list[str], ready: re.Pattern[str] | None, timeout: float, env: dict[str, str]) -> dict[str, int]:
    """The loader's lookups before main (LD_DEBUG=statistics), and the objects loaded and their
    relative relocations (read from the files)."""
    counted = count(argv, ready, timeout, env)
    objects = [Path(argv[0]), *[p for p in closure(Path(argv[0]))]]
    return {
        "lookups": counted.statistics.get("relocations", 0),
        "from_cache": counted.statistics.get("from_cache", 0),
        "relative": sum(read_object(str(p)).relative for p in objects),
        "objects": len(objects),
    }


def compare(
    before: list[str],
    after: str,
    ready: re.Pattern[str] | None,
    timeout: float,
    runs: int,
    env: dict[str, str],
    warm: bool = True,
) -> dict[str, Any]:
    """Both builds timed alternately by exec, and the first one served warm, in one launch-timer run."""
    after_argv = [after, *before[1:]]
    result: dict[str, Any] = {
        "output_identical": output(before, ready, timeout, env) == output(after_argv, ready, timeout, env),
        "counts_before": counts(before, ready, timeout, env),
        "counts_after": counts(after_argv, ready, timeout, env),
    }
    modes = ["exec", "exec@after"]
    env = mark_main_env(env, [before[0], after])
    with ExitStack() as stack:
        daemons = {}
        if warm:
            try:
                daemon = stack.enter_context(
                    private_daemon([], extra_args=["--warm", before[0], "--no-learn"], env=env)
                )
                daemons["warm"] = str(daemon.socket)
                modes += ["direct@warm", "run@warm"]
            except HeadstartError as e:
                result["warm_error"] = str(e).strip().splitlines()[-1]
        rows = timer_rows(before, ready, timeout, runs, modes, env, builds={"after": after}, daemons=daemons)
    for mode, key in (
        ("exec", "exec_before_us"),
        ("exec@after", "exec_after_us"),
        ("direct@warm", "warm_client_us"),
        ("run@warm", "warm_run_us"),
    ):
        values = [r["to_main_ns"] / 1000 for r in rows if r["mode"] == mode and "to_main_ns" in r]
        errors = sorted({r["error"] for r in rows if r["mode"] == mode and "error" in r})
        if values:
            result[key] = summarize(values).as_dict()
        elif mode in modes:
            result.setdefault("warm_error" if "warm" in mode else "error", "; ".join(errors) or "no launch")
    if "exec_before_us" not in result or "exec_after_us" not in result:
        raise HeadstartError(f"{before[0]}: the exec launches failed: {result.get('error', 'no launch')}")
    result["ratio"] = result["exec_after_us"]["median"] / result["exec_before_us"]["median"]
    result["goal_reached"] = result["ratio"] <= GOAL and result["output_identical"]
    return result


def check_samples(
    names: list[str], build_dir: Path, folder: Path, runs: int, analysis_runs: int, timeout: float
) -> dict[str, Any]:
    """Each sample relinked with its advice, checked and timed (GUI samples under a private Xvfb)."""
    programs = []
    with ExitStack() as stack:
        display: dict[str, str] | None = None
        for name in names:
            spec = SAMPLES[name]
            env = dict(os.environ)
            if spec.display:
                if display is None:
                    display = stack.enter_context(private_display("x11"))
                env = display_env(env, "x11", display)
            ready = re.compile(spec.ready) if spec.ready else None
            try:
                before, _ = relink(name, build_dir, folder / name, None)
                argv = [str(before), *spec.args]
                analysis = analyse(argv, ready, timeout, analysis_runs, env)
                after, applied = relink(name, build_dir, folder / name, analysis["advice"])
                entry = {
                    "name": name,
                    "applied": applied,
                    "before": str(before),
                    "after": str(after),
                    **compare(argv, str(after), ready, timeout, runs, env),
                }
                entry["expected_us"] = [
                    {
                        "advice": a["advice"],
                        "object": a["object"],
                        "us": a["saves"]["us"],
                        "us_at_most": a["saves"]["us_at_most"],
                    }
                    for a in analysis["advice"]
                    if a["holds"] and a["yours"] and a["flags"]
                ]
            except HeadstartError as e:
                entry = {"name": name, "error": str(e).splitlines()[0]}
            programs.append(entry)
    return {"schema": SCHEMA, "runs": runs, "folder": str(folder), "goal_ratio": GOAL, "programs": programs}


def check_builds(
    before: list[str], after: Path, ready: re.Pattern[str] | None, timeout: float, runs: int
) -> dict[str, Any]:
    """Two builds the user made: `before` (with its arguments) and `after`, relinked."""
    entry = {
        "name": Path(before[0]).name,
        "applied": ["as built"],
        "before": before[0],
        "after": str(after),
        **compare(before, str(after.resolve()), ready, timeout, runs, dict(os.environ)),
    }
    return {
        "schema": SCHEMA,
        "runs": runs,
        "folder": str(after.resolve().parent),
        "goal_ratio": GOAL,
        "programs": [entry],
    }
