"""headstart-run --status --json (hs_daemon_status_json): the daemon's status as one JSON object, each
line of the text status in it (numbers as numbers, one-per-item keys as arrays), and paths with
quotes and backslashes escaped."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

from conftest import base_env, bin_path
from headstart.daemon import private_daemon

LISTS = {"program", "preload", "learned", "warm-up", "declined", "schedule", "prepared"}


def status(daemon, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(bin_path("headstart-run")), "--socket", str(daemon.socket), "--status", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def test_the_json_status_holds_every_line_of_the_text_one(tmp_path):
    odd = tmp_path / 'a "quoted" \\ name'
    shutil.copy(bin_path("observe"), odd)
    args = ["--schedule", f"{bin_path('observe')} nice=1", "--pool", "1", "--prepare-display", str(odd)]
    with private_daemon([odd], extra_args=args) as d:
        subprocess.run([str(bin_path("headstart-run")), "--socket", str(d.socket), str(odd), "exit", "0"],
                       capture_output=True, timeout=30, start_new_session=True)  # fmt: skip
        # The pool refills and the child's record goes just after the launch: the two answers are
        # compared once nothing moves any more (compared during the refill, this failed 5 in 23).
        wait_settled(d)
        text, as_json = status(d), status(d, "--json")
    assert text.returncode == 0 and as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert as_json.stdout.count("\n") == 1
    seen: dict[str, list[str]] = {}
    for line in text.stdout.splitlines():
        key, _, value = line.partition(": ")
        seen.setdefault(key, []).append(value)
    assert set(data) == set(seen)
    for key, values in seen.items():
        if key in LISTS:
            assert data[key] == values, key
        elif values[0].isdigit() and key not in ("uptime-seconds",):
            assert data[key] == int(values[0]) and len(values) == 1, key
        elif not values[0].isdigit():
            assert data[key] == values[0], key
    assert data["program"] == [f"preload {odd}"] and data["launches"] == 1
    assert isinstance(data["pool-size"], int) and data["schedule"][0].endswith("-- nice 1")
    (prepared,) = data["prepared"]
    assert prepared.startswith(f"refused none {odd} 0 -- it does not link GTK 3 or GTK 4"), prepared


def wait_settled(daemon, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        s = daemon.status()
        if s["pool-waiting"] == s["pool-size"] and s["running"] == ["0"]:
            return
        assert time.monotonic() < deadline, s
        time.sleep(0.02)


def test_json_without_status_is_a_usage_error():
    done = subprocess.run([str(bin_path("headstart-run")), "--json", "/bin/true"], capture_output=True, text=True)
    assert done.returncode == 2 and "--json goes with --status" in done.stderr and done.stderr.count("\n") == 1


def test_a_clients_text_in_a_decline_adds_no_line_to_the_status():
    """A decline's text holds the client's variable as it came: with newlines in it, a client put
    lines of its own into --status (`running: 12345`, a program line), and into --json's keys."""
    injected = "1)\nrunning: 12345\nprogram: warm /usr/bin/evil"
    with private_daemon([bin_path("observe")]) as d:
        got = subprocess.run(
            [str(bin_path("headstart-run")), "--socket", str(d.socket), str(bin_path("observe")), "exit", "0"],
            env=base_env(LD_X=injected),
            capture_output=True,
            timeout=30,
            start_new_session=True,
        )
        assert got.returncode == 0
        text = status(d).stdout
        declined = [line for line in text.splitlines() if line.startswith("declined: environment")]
        assert len(declined) == 1 and "LD_X=1)?running: 12345?program: warm /usr/bin/evil" in declined[0], text
        assert "running: 12345" not in text.splitlines() and "/usr/bin/evil" not in [
            line.split()[-1] for line in text.splitlines() if line.startswith("program:")
        ]
        parsed = json.loads(status(d, "--json").stdout)
        assert parsed["running"] != 12345 and not any("evil" in p for p in parsed["program"])


def test_a_clients_path_with_a_newline_adds_no_line_to_the_log(tmp_path):
    """The verbose log's "started PATH" quotes the client's path as it came: with a newline in it, a
    client wrote a line of its own into the daemon's log, looking like the daemon's."""
    odd = tmp_path / "x\nheadstartd: declined: nothing"
    shutil.copy(bin_path("observe"), odd)
    with private_daemon([]) as d:
        got = subprocess.run(
            [str(bin_path("headstart-run")), "--socket", str(d.socket), str(odd), "exit", "0"],
            capture_output=True,
            timeout=30,
            start_new_session=True,
        )
        assert got.returncode == 0 and d.status()["launches"] == ["1"], got.stderr
        log = d.log_text()
    assert "x?headstartd: declined: nothing as " in log, log
    assert not any(line.startswith("headstartd: declined") for line in log.splitlines()), log
