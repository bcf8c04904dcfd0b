"""`headstart lazy plan` over many programs (issue 30; `make lazy-corpus`, docs/lazy.md): which of
their libraries they do not call before ready, and the bytes then not loaded.

Every dynamically linked program of the folders given (default /usr/bin and /usr/sbin; or --list FILE,
one path a line) is launched once as `PROGRAM --version`, ready at its exit, with the loader's account
of its bindings, as `headstart profile` does for its plan; the plan is then made from that launch
(for a program linked with -z now, with the runs with stubs that tell its calls, lazy/calls.py). One
JSON object a program goes to OUT/lazy-corpus.jsonl (a run stopped midway goes on from there), the
summary to OUT/lazy-corpus.json and the terminal.

Launching every program of a system is not harmless (killall5 signals every process, some start
daemons), so, started as root, the run executes itself as nobody in new PID, network and mount
namespaces: what the programs start ends with it, they reach no network and can write nothing of
the system's. Programs that are setuid (the loader ignores LD_AUDIT for them) and killall5 are
skipped."""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from headstart.errors import HeadstartError
from headstart.lazy.elf_facts import read_facts
from headstart.lazy.plan import plan
from headstart.profiling.launch import LaunchOptions, run
from headstart.profiling.summary import libraries
from headstart.verdicts import programs_in_dir, programs_listed

TIMEOUT_S = 10.0
SKIPPED = {"killall5": "signals every process"}
NOBODY = "65534"
SYSTEM_PYTHON = "/usr/bin/python3"


def _sandboxed(argv: list[str]) -> None:
    """As root: again as nobody, in namespaces of its own (never returns)."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare is None or setpriv is None or not Path(SYSTEM_PYTHON).exists():
        sys.exit(f"lazy corpus: needs unshare and setpriv (util-linux) and {SYSTEM_PYTHON} to run as nobody")
    # The system's Python (a virtual environment's may be root's alone) with our packages.
    ours = [p for p in sys.path if p and Path(p).is_dir() and not p.startswith(sys.base_prefix)]
    os.environ["PYTHONPATH"] = os.pathsep.join(ours)
    cmd = [unshare, "--pid", "--fork", "--net", "--mount", "--mount-proc",
           setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
           SYSTEM_PYTHON, *argv]  # fmt: skip
    os.execv(unshare, cmd)


def _why_skipped(path: str) -> str | None:
    if Path(path).name in SKIPPED:
        return SKIPPED[Path(path).name]
    if os.stat(path).st_mode & 0o6000:
        return "setuid or setgid: the loader ignores LD_AUDIT"
    try:
        facts = read_facts(path)
    except HeadstartError as e:
        return str(e)
    return None if facts.needed else "statically linked"


def one(path: str) -> dict[str, Any]:
    """The plan of one program, from one launch with --version."""
    why = _why_skipped(path)
    if why:
        return {"program": path, "skipped": why}
    argv = [path, "--version"]
    try:
        launch = run(LaunchOptions(argv, None, TIMEOUT_S, bindings=True))
        if launch.timeline is None:
            return {"program": path, "skipped": "the probe recorded nothing"}
        profile = {"program": argv, "ready": "exit", "libraries": libraries([launch], [], launch)}
        data = plan([profile])
    except HeadstartError as e:
        return {"program": path, "skipped": str(e).splitlines()[0]}
    deps = [{k: d[k] for k in ("soname", "path", "size", "bindings_before_ready", "called_before_ready", "verdict")}
            | {"refusals": d["refusals"]} for d in data["dependencies"]]  # fmt: skip
    return {"program": path, "exit_status": launch.exit_status, "bind_now": data["bind_now"],
            "dependencies": deps, "deferred_bytes": data["deferred_bytes"]}  # fmt: skip


def _median(values: list[int]) -> float:
    return statistics.median(values) if values else 0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    planned = [r for r in rows if "skipped" not in r]
    now = [r for r in planned if r["bind_now"]]
    deferring = [r for r in planned if r["deferred_bytes"]]
    # -z now programs the plan before issue 30 refused: every library they bind counted as used.
    unhidden = [r for r in now if any(d["verdict"] == "defer" and d["bindings_before_ready"]
                                      for d in r["dependencies"])]  # fmt: skip
    by_library: dict[str, int] = {}
    for r in deferring:
        for d in r["dependencies"]:
            if d["verdict"] == "defer":
                by_library[d["soname"]] = by_library.get(d["soname"], 0) + 1
    skipped: dict[str, int] = {}
    for r in rows:
        if "skipped" in r:
            said = r["skipped"]
            reason = (
                said
                if "LD_AUDIT" in said
                else "did not " + said.split(" did not ")[-1]
                if " did not " in said
                else said.split(":")[0]
            )
            skipped[reason] = skipped.get(reason, 0) + 1
    # The drop-in, for a program left as it is, is for libraries without constructors of their own.
    drop_in = [sum(d["size"] for d in r["dependencies"] if d["verdict"] == "defer"
                   and not read_facts(d["path"]).constructors) for r in deferring]  # fmt: skip
    not_told = sum(1 for r in now for d in r["dependencies"] if any("not known" in x for x in d["refusals"]))
    return {
        "programs": len(rows),
        "planned": len(planned),
        "skipped": dict(sorted(skipped.items(), key=lambda kv: -kv[1])),
        "bind_now": len(now),
        "with_a_deferrable_library": len(deferring),
        "bind_now_with_a_deferrable_library": sum(1 for r in now if r["deferred_bytes"]),
        "bind_now_refused_before": len(unhidden),
        "bind_now_libraries_not_told": not_told,
        "deferred_bytes_total": sum(r["deferred_bytes"] for r in deferring),
        "deferred_bytes_median": _median([r["deferred_bytes"] for r in deferring]),
        "bind_now_deferred_bytes_total": sum(r["deferred_bytes"] for r in now),
        "bind_now_deferred_bytes_median": _median([r["deferred_bytes"] for r in now if r["deferred_bytes"]]),
        "with_a_drop_in_library": sum(1 for b in drop_in if b),
        "drop_in_bytes_total": sum(drop_in),
        "bind_now_with_a_drop_in_library": sum(
            1 for r, b in zip(deferring, drop_in, strict=True) if b and r["bind_now"]
        ),
        "most_deferred": dict(sorted(by_library.items(), key=lambda kv: -kv[1])[:15]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="where lazy-corpus.jsonl and lazy-corpus.json go")
    ap.add_argument("folders", nargs="*", type=Path, default=[Path("/usr/bin"), Path("/usr/sbin")])
    ap.add_argument("--list", type=Path, help="the programs, one path a line, instead of folders")
    ap.add_argument("--limit", type=int, help="at most this many programs (a quick look)")
    ap.add_argument("--jobs", type=int, default=1, help="programs planned at once (default 1)")
    args = ap.parse_args()
    if os.geteuid() == 0:
        args.out.mkdir(parents=True, exist_ok=True)
        os.chmod(args.out, 0o777)
        _sandboxed([str(Path(__file__).resolve()), *sys.argv[1:]])
    home = tempfile.mkdtemp(prefix="headstart-lazy-corpus-home-")
    os.environ["HOME"] = home  # what the programs write there, they write in our own
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"):
        os.environ.pop(name, None)
    if args.list:
        programs = programs_listed(args.list.read_text().splitlines())
    else:
        real: dict[Path, str] = {}  # a program linked under several names (/usr/sbin/halt) once
        for p in sorted(p for folder in args.folders for p in programs_in_dir(folder)):
            real.setdefault(Path(p).resolve(), p)
        programs = sorted(real.values())
    programs = programs[: args.limit] if args.limit else programs
    log = args.out / "lazy-corpus.jsonl"
    with open(log, "a") as f:
        try:  # one run at a time in OUT: a second one would plan the same programs again
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(f"lazy corpus: another run is writing {log}")
        return _plan_all(programs, log, f, args)


def _plan_all(programs: list[str], log: Path, f: IO[str], args: argparse.Namespace) -> int:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    done = {r["program"] for r in rows}
    todo = [p for p in programs if p not in done]
    with multiprocessing.Pool(args.jobs) as pool:
        for i, row in enumerate(pool.imap_unordered(one, todo), len(programs) - len(todo) + 1):
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
            said = row.get("skipped") or f"{row['deferred_bytes'] // 1024} KiB deferrable"
            print(f"[{i}/{len(programs)}] {row['program']}: {said}", flush=True)
    latest = {r["program"]: r for r in rows}  # a program planned twice (runs that overlapped): its last
    summary = summarize([latest[p] for p in programs if p in latest])
    (args.out / "lazy-corpus.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
