"""Per-program scheduling (--schedule, docs/scheduling.md): a served launch and one from the pool see
the configured policy, priority, nice, affinity and cgroups, as chrt, nice and taskset give a program
exec'd under them; the exec'd fallback of a declined one, and the client, get none of it (the
daemon's privilege would go to a process free not to exec the program); a deadline program runs
(and may not fork, as under chrt); what the daemon cannot do is refused at start in one line; and a
client brings no scheduling of its own to a served program."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import (
    SANITIZED,
    base_env,
    bin_path,
    daemon_stopped,
    helper_path,
    run_exec,
    run_served,
    wait_for_log,
    waiting_children,
)
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError
from test_attacks import another_user, wait_for_line
from test_hostile import (
    HEADER,
    MAGIC,
    MSG_DECLINED,
    MSG_LAUNCH,
    VERSION,
    connect,
    launch_payload,
    read_reply,
    send_with_fds,
)

REPORT = helper_path("sched-report")
LAST_CPU = max(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="real-time policies and cgroups need root here")
# A schedule that needs the daemon's privilege (CAP_SYS_NICE here: root), which a client must not get.
FIFO = f"policy=fifo priority=20 cpus={LAST_CPU} nice=3"
FLAG_EXECS_WHEN_DECLINED = 0x4


def report_lines(out: bytes) -> tuple[list[str], list[str]]:
    """Its lines without the cgroups, and the cgroup lines of the cpu and cpuset controllers."""
    lines = out.decode().splitlines()
    groups = [line for line in lines if line.startswith("cgroup ") and not line.startswith("cgroup 0::")]
    return [line for line in lines if not line.startswith("cgroup ")], groups


def in_groups(groups: list[str], daemon: RunningDaemon, index: int) -> bool:
    """In the daemon's group for its schedule index (named after its supervisor's pid)."""
    return bool(groups) and all(g.endswith(f"/headstart-{daemon.process.pid}-{index}") for g in groups)


def start_refused(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """headstartd with these options, which must stop it before it listens."""
    cmd = [str(bin_path("headstartd")), "--allow-root", "--socket", "/nonexistent/socket", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, **kw)  # type: ignore[call-overload]


def refusal(settings: str) -> str | None:
    """Why headstartd will not start with this schedule of REPORT here, or None when it starts."""
    try:
        with private_daemon([REPORT], extra_args=["--schedule", f"{REPORT} {settings}"]):
            return None
    except HeadstartError as e:
        return str(e)


def test_served_and_pooled_launches_get_the_schedule_chrt_taskset_and_nice_give_exec():
    settings = FIFO
    groups_too = f"{settings} cpu-max=20ms/100ms cpuset={LAST_CPU}"
    why = refusal(groups_too)
    if why and "cannot make its cgroup" not in why:
        assert run_exec(["chrt", "-f", "20", "true"]).returncode != 0, f"chrt can, the daemon cannot: {why}"
        pytest.skip(f"real-time scheduling is not available here: {why}")
    with_groups = why is None  # a container may give the daemon no cgroup of its own: said in one line
    want = run_exec(["nice", "-n", "3", "chrt", "-f", "20", "taskset", "-c", str(LAST_CPU), str(REPORT)])
    assert want.returncode == 0, want.stderr
    want_lines, _ = report_lines(want.stdout)
    assert "policy 1 priority 20" in want_lines[0] and want_lines[-1] == f"cpus {LAST_CPU}"
    spec = f"{REPORT} {groups_too if with_groups else settings}"
    for extra in ([], ["--pool", "1"]):
        with private_daemon([REPORT], extra_args=["--schedule", spec, *extra]) as daemon:
            served = run_served(daemon, [str(REPORT)])
            lines, groups = report_lines(served.stdout)
            assert served.returncode == 0 and lines == want_lines, served.stderr
            assert in_groups(groups, daemon, 0) or not with_groups, groups
            assert daemon.launches_started() == 1
            said = f"{REPORT} -- fifo 20, cpus {LAST_CPU}, nice 3"
            said += ", cpu-max 20000/100000 us, cpuset " + str(LAST_CPU) if with_groups else ""
            # exclusive where the parent cpuset is (the root one is): a v1 cpu_exclusive group
            assert daemon.status()["schedule"] in ([said], [said + " (exclusive)"])


def fifo_schedule() -> list[str]:
    """The daemon's options for FIFO on REPORT, or a skip where the daemon may not apply it."""
    why = refusal(FIFO)
    if why:
        assert run_exec(["chrt", "-f", "20", "true"]).returncode != 0, f"chrt can, the daemon cannot: {why}"
        pytest.skip(f"real-time scheduling is not available here: {why}")
    return ["--schedule", f"{REPORT} {FIFO}"]


def scheduling(pid: int) -> list[object]:
    """What FIFO sets, as the kernel says it of pid."""
    return [os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid), sorted(os.sched_getaffinity(pid))]


def send_launch(daemon: RunningDaemon, env: list[bytes]) -> socket.socket:
    """A LAUNCH of REPORT from this process, which says it execs the program when declined."""
    payload = launch_payload([bytes(REPORT)], env, bytes(REPORT), flags=FLAG_EXECS_WHEN_DECLINED)
    s = connect(daemon)
    fds = [os.open(REPORT, os.O_PATH), os.open("/", os.O_PATH)]
    try:
        send_with_fds(s, HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, len(payload)) + payload, fds)
    finally:
        for fd in fds:
            os.close(fd)
    return s


def test_a_declined_launch_is_execd_with_the_clients_own_scheduling_as_plain_exec():
    """Declined, the client execs the program, and the daemon gave the client the program's schedule
    first, with its own privilege. The program now runs as plain exec runs it: what the client has."""
    extra = fifo_schedule()
    want = run_exec([str(REPORT)])
    assert want.returncode == 0 and b"policy 0 priority 0" in want.stdout, want.stderr
    with private_daemon([REPORT], extra_args=extra) as daemon:
        declined = run_served(daemon, [str(REPORT)], env=base_env(LD_BIND_NOW="1"))  # another loader environment
        assert (declined.returncode, declined.stdout) == (0, want.stdout), declined.stderr
        assert daemon.launches_started() == 0 and "LD_BIND_NOW" in daemon.log_text()
        assert "could not be given" not in daemon.log_text()


def test_a_declined_client_that_runs_something_else_never_has_the_daemons_privilege():
    """The red team's: a client that says it will exec the program when declined, gets itself
    declined on purpose and then runs what it likes. It was made SCHED_FIFO 20 by a daemon with
    CAP_SYS_NICE, which it did not have; nothing made it exec the program."""
    extra = fifo_schedule()
    with private_daemon([REPORT], extra_args=extra) as daemon:
        r, w = os.pipe()
        client = os.fork()
        if client == 0:
            try:
                os.close(r)
                with send_launch(daemon, [b"PATH=/usr/bin:/bin", b"LD_BIND_NOW=1"]) as s:
                    reply = read_reply(s)
                os.write(w, json.dumps([reply and reply[0], *scheduling(0)]).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            said = f.read()
        os.waitpid(client, 0)
    assert said and json.loads(said) == [MSG_DECLINED, *scheduling(0)], said


def process_with_pid(pid: int) -> subprocess.Popen[bytes]:
    """A root `sleep` with the pid of a process that ended (the kernel's next pid set: root only)."""
    for _ in range(50):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        p = subprocess.Popen(["sleep", "300"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    pytest.skip("another process took the pid each time")


def test_a_process_that_took_the_pid_of_a_client_gone_is_never_given_the_schedule():
    """The red team's: the schedule went to the client's pid by number (SO_PEERCRED), even when the
    client was gone and declined for it. A client that sent its launch and ended, its pid used again
    by a root `sleep`, made that sleep SCHED_FIFO. The daemon is stopped meanwhile, so that the
    order is sure."""
    extra = fifo_schedule()
    with private_daemon([REPORT], extra_args=extra) as d:
        with daemon_stopped(d):
            client = os.fork()
            if client == 0:
                try:
                    send_launch(d, [b"PATH=/usr/bin:/bin"]).detach()
                finally:
                    os._exit(0)
            os.waitpid(client, 0)
            sleeper = process_with_pid(client)
        try:
            wait_for_log(d, "declined: ")
            assert scheduling(sleeper.pid) == scheduling(0), d.log_text()
        finally:
            sleeper.kill()
            sleeper.wait()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_daemon_given_cap_sys_nice_says_so_and_serves_no_client_without_it(trusted_tmp):
    """A daemon given CAP_SYS_NICE for its schedules (AmbientCapabilities=): its children have it,
    and a client without it must not get it for its program, so it is declined and execs, with no
    schedule; the daemon says at start what its capabilities mean. (Serving such a client with the
    child's capabilities lowered after the schedule was tried and taken out: a prepared child runs
    the client's modules before that, with the capability.)"""
    if refusal(FIFO):
        pytest.skip("real-time scheduling is not available here")
    user, runtime = another_user(trusted_tmp)
    log = trusted_tmp / "daemon.log"
    privileged = [*user, "--inh-caps=+sys_nice", "--ambient-caps=+sys_nice"]
    daemon_cmd = [str(bin_path("headstartd")), "--socket", f"{runtime}/socket", "--verbose"]
    daemon_cmd += ["--schedule", f"{REPORT} {FIFO}", "--app", str(REPORT)]
    with open(log, "wb") as out:
        daemon = subprocess.Popen([*privileged, *daemon_cmd], stdout=out, stderr=out, env=base_env())
    try:
        wait_for_line(log, "ready: listening")
        assert "running with capabilities: it serves only clients that have the same" in log.read_text()
        client = [*user, str(bin_path("headstart-run")), "--socket", f"{runtime}/socket", str(REPORT)]
        got = subprocess.run(client, capture_output=True, env=base_env(), start_new_session=True)
        assert (got.returncode, got.stdout) == (0, run_exec([*user, str(REPORT)]).stdout), got.stderr
        assert b"policy 0 priority 0" in got.stdout
        assert "declined: the client's capabilities differ" in log.read_text(), log.read_text()
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def test_a_deadline_program_runs_and_cannot_fork_as_under_chrt():
    settings = "policy=deadline runtime=2ms deadline=10ms period=10ms"
    chrt = ["chrt", "-d", "--sched-runtime", "2000000", "--sched-deadline", "10000000", "--sched-period", "10000000"]
    why = refusal(settings)
    if why:
        assert run_exec([*chrt, "0", "true"]).returncode != 0, f"chrt can, the daemon cannot: {why}"
        pytest.skip(f"SCHED_DEADLINE is not available here: {why}")
    spec = f"{REPORT} {settings}"
    want = run_exec([*chrt, "0", str(REPORT), "fork"])
    assert want.returncode == 0 and b"policy 6 priority 0 runtime 2000000 deadline 10000000" in want.stdout
    assert b"fork Resource temporarily unavailable" in want.stdout
    with private_daemon([REPORT], extra_args=["--schedule", spec, "--pool", "1"]) as daemon:
        for _ in range(2):  # from the pool, then forked afresh while the pool refills
            served = run_served(daemon, [str(REPORT), "fork"])
            assert (served.returncode, served.stdout) == (0, want.stdout), served.stderr
        assert daemon.launches_started() == 2


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ("policy=fast", "bad setting 'policy=fast'"),
        ("priority=20", "priority= goes with policy=fifo or rr"),
        ("policy=rr", "priority= goes with policy=fifo or rr"),
        ("policy=deadline runtime=5ms deadline=2ms period=10ms", "runtime <= deadline <= period"),
        ("cpus=99999", "bad setting 'cpus=99999'"),
        ("nice=40", "bad setting 'nice=40'"),
        ("cpu-max=5ms", "bad setting 'cpu-max=5ms'"),
        ("", "it sets nothing"),
        ("cpus", "bad setting 'cpus'"),
    ],
)
def test_bad_settings_are_refused_at_start_in_one_line(settings, said):
    done = start_refused("--schedule", f"{REPORT} {settings}")
    assert done.returncode != 0 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_an_unknown_program_is_refused_at_start():
    done = start_refused("--schedule", "/no/such/program nice=1")
    assert done.returncode != 0 and "schedule /no/such/program: cannot find the program" in done.stderr


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_daemon_without_the_privilege_is_refused_at_start_not_at_a_launch():
    def no_rtprio() -> None:
        resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))

    cmd = ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--", str(bin_path("headstartd")),
           "--allow-root", "--socket", "/nonexistent/socket",
           "--schedule", f"{REPORT} policy=fifo priority=10"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, preexec_fn=no_rtprio)
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert "setting its scheduling policy failed: Operation not permitted" in done.stderr
    assert "CAP_SYS_NICE or an RLIMIT_RTPRIO" in done.stderr


def test_clamps_are_applied_where_the_kernel_has_them_and_refused_at_start_where_not():
    supported = not run_exec([str(REPORT)]).stdout.decode().splitlines()[1].endswith("-0")
    spec = f"{REPORT} uclamp-min=128 uclamp-max=512"
    if not supported:  # CONFIG_UCLAMP_TASK off: a clear line at start, not a failure at each launch
        done = start_refused("--schedule", spec)
        assert done.returncode != 0 and "setting its utilization clamps failed" in done.stderr, done.stderr
        return
    with private_daemon([REPORT], extra_args=["--schedule", spec]) as daemon:
        served = run_served(daemon, [str(REPORT)])
        assert b"uclamp 128-512" in served.stdout, served.stderr


@pytest.mark.skipif(SANITIZED, reason="the client is the same program in both builds")
def test_a_client_brings_no_scheduling_of_its_own():
    with private_daemon([REPORT], extra_args=["--schedule", f"{REPORT} nice=3"]) as daemon:
        # A real-time client: the configured program runs as configured, not as the client does.
        served = run_exec(["chrt", "-f", "5", str(bin_path("headstart-run")), "--socket",
                                     str(daemon.socket), str(REPORT)])  # fmt: skip
        assert served.returncode == 0 and b"policy 0 priority 0" in served.stdout and b"nice 3" in served.stdout
        assert daemon.launches_started() == 1
    other = helper_path("observe")
    with private_daemon([other]) as daemon:
        # Without a schedule, a client under nice is declined and execs: nice as exec gives it.
        want = run_exec(["nice", "-n", "5", str(REPORT)])
        got = run_exec(["nice", "-n", "5", str(bin_path("headstart-run")), "--socket", str(daemon.socket),
                                  str(REPORT)])  # fmt: skip
        assert (got.returncode, got.stdout) == (0, want.stdout)
        assert daemon.launches_started() == 0, daemon.log_text()
        # Saying what differs (a new user's trial: a program had reniced its caller's whole group).
        assert "scheduled otherwise than the daemon (its nice value" in daemon.log_text()


def test_a_schedule_added_before_a_sighup_is_checked_not_failed_at_each_launch(trusted_tmp):
    """SIGHUP reads the configuration again, in the new zygote alone: a schedule added to it was
    taken without the start's checks, and each launch then failed to apply it and exec'd. A schedule
    that needs a cgroup the start did not make is now refused there, and the serving zygote stays."""
    config = trusted_tmp / "headstart.conf"
    config.write_text("")
    with private_daemon([REPORT], extra_args=["--config", str(config)]) as d:
        config.write_text(f"schedule = {REPORT} nice=2 cpu-max=20ms/100ms\n")
        d.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        while "made no cgroup for it at its start" not in d.log_text():
            assert time.monotonic() < deadline, d.log_text()
            time.sleep(0.05)
        status = d.status()
        assert status["generation"] == ["1"] and not status.get("schedule"), status
        served = run_served(d, [str(REPORT)])
        assert served.returncode == 0 and d.launches_started() == 1, served.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin the daemon to one")
def test_a_daemon_pinned_by_another_process_declines_clients_it_no_longer_matches():
    """The daemon read its own scheduling once, at its first launch: pinned to one CPU afterwards
    (taskset -p, or CPUs going offline), it served clients that could use every CPU with children
    pinned as it was; pinned before its first launch and let go, it declined every client after."""
    argv = [str(bin_path("observe")), "exit", "0"]
    env = base_env(HEADSTART_DEBUG="1")
    cpus = os.sched_getaffinity(0)
    with private_daemon([bin_path("observe")]) as d:
        assert b"by exec" not in run_served(d, argv, env=env).stderr
        zygote = d.zygote_pid()
        os.sched_setaffinity(zygote, {min(cpus)})
        try:
            pinned = run_served(d, argv, env=env)
        finally:
            os.sched_setaffinity(zygote, cpus)
        again = run_served(d, argv, env=env)
    assert b"scheduled otherwise than the daemon (its CPU affinity" in pinned.stderr, pinned.stderr
    assert b"by exec" not in again.stderr, again.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin the daemon to one")
def test_a_waiting_child_forked_before_the_daemon_was_pinned_does_not_run_a_launch():
    """The pool's child kept the affinity the daemon had at its fork. Pinned since by another
    process, the daemon serves a client pinned as it now is, and the program must run pinned, as
    exec would run it, not on the old child's CPUs."""
    one = {min(os.sched_getaffinity(0))}

    def pinned() -> None:
        os.sched_setaffinity(0, one)

    env = base_env(HEADSTART_DEBUG="1")
    with private_daemon([REPORT], extra_args=["--pool", "1"]) as d:
        assert len(waiting_children(d, 1)) == 1
        zygote = d.zygote_pid()
        cpus = os.sched_getaffinity(zygote)
        os.sched_setaffinity(zygote, one)
        try:
            served = run_served(d, [str(REPORT)], env=env, preexec_fn=pinned)
        finally:
            os.sched_setaffinity(zygote, cpus)
        log = d.log_text()
    by_exec = run_exec([str(REPORT)], preexec_fn=pinned)
    assert served.returncode == 0 and b"by exec" not in served.stderr, served.stderr
    assert report_lines(served.stdout)[0] == report_lines(by_exec.stdout)[0]
    assert "which another process changed since; forking instead" in log, log
