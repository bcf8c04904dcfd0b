"""Adaptive preload and warm-up: the daemon learns what its programs load after main, keeps it in a
state file, preloads it from the next zygote on (each object tested first), and runs warm-up steps
in the zygote, refusing those that start a thread."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import Served, base_env, helper_path, run_exec, run_served
from headstart.daemon import RunningDaemon, private_daemon

USES_PLUGIN = helper_path("uses-plugin")
PLUGIN = helper_path("hs-plugin.so")
THREAD_PLUGIN = helper_path("hs-plugin-thread.so")
HEADER = "# headstart: objects loaded after main, learned by headstartd (version 1)"


@contextmanager
def learning_daemon(state: Path, *extra: str) -> Iterator[RunningDaemon]:
    args = ["--app", str(USES_PLUGIN), "--learn-file", str(state), *extra]
    with private_daemon([], extra_args=args) as d:
        yield d
    assert d.process.returncode == 0, d.log_text()


def wait_status(d: RunningDaemon, done: Callable[[dict[str, list[str]]], bool], timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = d.status()
        if done(status):
            return status
        assert time.monotonic() < deadline, f"{status}\n{d.log_text()}"
        time.sleep(0.05)


def learned(status: dict[str, list[str]], state: str, obj: Path) -> list[str]:
    return [v for v in status.get("learned", []) if v.startswith(f"{state} {USES_PLUGIN} {obj}")]


def run_plugin(d: RunningDaemon | None, plugin: Path) -> tuple[str, str]:
    argv = [str(USES_PLUGIN), str(plugin)]
    got = run_served(d, argv) if d else run_exec(argv)
    assert got.returncode == 0, got.stderr
    return got.stdout.decode(), got.stderr.decode()


def test_learns_what_loads_after_main_and_preloads_it_from_the_next_zygote(tmp_path):
    state = tmp_path / "learned"
    exec_out, exec_err = run_plugin(None, PLUGIN)
    assert exec_out == "hello from the plugin\n" and "loaded before main: no" in exec_err
    with learning_daemon(state) as d:
        with Served(d):
            out, err = run_plugin(d, PLUGIN)
        assert out == exec_out and "loaded before main: no" in err
        status = wait_status(d, lambda s: bool(learned(s, "preloaded", PLUGIN)))
        assert int(status["generation"][0]) >= 2
        assert "learned 1 objects loaded after main" in d.log_text()
        with Served(d):
            out, err = run_plugin(d, PLUGIN)
        assert out == exec_out and "loaded before main: yes" in err
    assert state.read_text() == f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}\nend\n"

    # A daemon started later preloads it from its first zygote.
    with learning_daemon(state) as d:
        status = d.status()
        assert status["generation"] == ["1"] and learned(status, "preloaded", PLUGIN)
        _, err = run_plugin(d, PLUGIN)
        assert "loaded before main: yes" in err


def test_an_object_the_program_closes_before_it_exits_is_learned_too(tmp_path):
    # Qt closes its display as it ends, and Mesa its GL driver with it: the link map at exit no
    # longer holds what the program loaded after main.
    state = tmp_path / "learned"
    argv = [str(USES_PLUGIN), str(PLUGIN), "close"]
    exec_run = run_exec(argv)
    assert exec_run.returncode == 0 and exec_run.stdout == b"hello from the plugin\n", exec_run.stderr
    with learning_daemon(state) as d:
        with Served(d):
            got = run_served(d, argv)
        assert (got.returncode, got.stdout) == (0, exec_run.stdout), got.stderr
        wait_status(d, lambda s: bool(learned(s, "preloaded", PLUGIN)))
        with Served(d):
            got = run_served(d, argv)
        assert (got.returncode, got.stdout) == (0, exec_run.stdout) and b"loaded before main: yes" in got.stderr
    assert state.read_text() == f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}\nend\n"


def test_no_learn_neither_learns_nor_preloads(tmp_path):
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}\nend\n")
    with learning_daemon(state, "--no-learn") as d:
        _, err = run_plugin(d, PLUGIN)
        assert "loaded before main: no" in err
        status = d.status()
        assert status["learning"] == ["off"] and "learned" not in status
        assert "learned:" not in d.log_text()


def test_a_learned_object_that_starts_a_thread_is_skipped_and_the_program_still_served(tmp_path):
    state = tmp_path / "learned"
    exec_out, _ = run_plugin(None, THREAD_PLUGIN)
    with learning_daemon(state, "--pool", "1") as d:
        run_plugin(d, THREAD_PLUGIN)
        status = wait_status(d, lambda s: bool(learned(s, "skipped", THREAD_PLUGIN)))
        (line,) = learned(status, "skipped", THREAD_PLUGIN)
        assert line.endswith("-- loading it starts a thread; the daemon forks and must stay single-threaded")
        with Served(d):
            out, err = run_plugin(d, THREAD_PLUGIN)
        assert out == exec_out and "loaded before main: no" in err
        # The zygote itself stayed single-threaded.
        assert len(os.listdir(f"/proc/{d.zygote_pid()}/task")) == 1


def test_a_learned_object_whose_constructor_changes_the_process_is_skipped(tmp_path):
    """A plugin whose constructor ignores SIGPIPE, preloaded, did so in the zygote, and each launch
    put back the client's disposition: the plugin then said "default" where exec's said "ignored"."""
    plugin = helper_path("hs-plugin-sigpipe.so")
    exec_out, _ = run_plugin(None, plugin)
    assert exec_out == "sigpipe ignored\n"
    with learning_daemon(tmp_path / "learned") as d:
        run_plugin(d, plugin)
        status = wait_status(d, lambda s: bool(learned(s, "skipped", plugin)))
        (line,) = learned(status, "skipped", plugin)
        assert "its constructors change a signal's disposition" in line, line
        with Served(d):
            out, err = run_plugin(d, plugin)
        assert out == exec_out and "loaded before main: no" in err


def test_a_learned_object_whose_constructor_never_returns_is_left_out_after_the_deadline(tmp_path):
    """Learned by a program that loaded it in another way (the state file says so), it hangs only in
    the daemon's test child, which the deadline (--trial-timeout, 30 s unless set) ends: the zygote
    starts and serves without it."""
    hang = helper_path("hs-plugin-hang.so")
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {USES_PLUGIN}\nobject {hang}\nobject {PLUGIN}\nend\n")
    started = time.monotonic()
    with learning_daemon(state, "--trial-timeout", "4") as d:
        assert time.monotonic() - started >= 4  # the deadline passed: not ended some other way
        status = d.status()
        (line,) = learned(status, "skipped", hang)
        assert line.endswith("-- loading it took more than 4 s in the test child"), status
        assert learned(status, "preloaded", PLUGIN), status
        with Served(d):
            out, _ = run_plugin(d, PLUGIN)
        assert out == run_plugin(None, PLUGIN)[0]


def test_a_learned_object_with_which_a_program_no_longer_loads_is_left_out(tmp_path):
    """Found by a new user: preloaded, an object learned for another program made a library's
    thread-local block dynamic, and a program reaching it by initial-exec code then failed to load in
    every child ("cannot allocate memory in static TLS block") and was exec'd for good. The zygote
    now leaves such an object out, saying which program it broke, and the program stays served."""
    program, plugin = helper_path("uses-plugin-ie-tls"), helper_path("hs-plugin-tls.so")
    argv = [str(program), str(plugin)]
    want = run_exec(argv)
    assert want.returncode == 0 and b"framework's thread-local counter: 1\n" in want.stdout
    # Found among others by halving: harmless objects before and after it stay preloaded.
    (jpeg,) = glob.glob("/usr/lib/*-linux-gnu/libjpeg.so.62")
    objects = [PLUGIN, plugin, Path(jpeg)]
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {program}\n" + "".join(f"object {o}\n" for o in objects) + "end\n")
    with private_daemon([], extra_args=["--app", str(program), "--learn-file", str(state)]) as d:
        status = d.status()
        (line,) = [v for v in status.get("learned", []) if v.startswith(f"skipped {program} {plugin}")]
        assert f"with it loaded, {program} no longer loads" in line and "static TLS" in line, line
        assert [v.split()[0] for v in status["learned"]] == ["preloaded", "skipped", "preloaded"], status
        with Served(d):
            got = run_served(d, argv)
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
        assert b"loaded before main: no" in got.stderr
    assert d.process.returncode == 0, d.log_text()


BAD_STATE = {
    "corrupt": (f"{HEADER}\nprogram {USES_PLUGIN}\nsomething else\nend\n", "not a file headstartd wrote at line 3"),
    "truncated": (f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}\n", "truncated"),
    "foreign-header": (f"# not ours\nprogram {USES_PLUGIN}\nobject {PLUGIN}\nend\n", "not a file headstartd wrote"),
    "cut-line": (f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}", "truncated"),
}


@pytest.mark.parametrize("case", sorted(BAD_STATE))
def test_a_bad_state_file_is_ignored_with_one_line_and_the_daemon_serves(tmp_path, case):
    text, message = BAD_STATE[case]
    state = tmp_path / "learned"
    state.write_text(text)
    with learning_daemon(state) as d:
        log = d.log_text()
        assert log.count("ignoring the learned objects in") == 1 and message in log, log
        assert "learned" not in d.status()
        with Served(d):
            out, _ = run_plugin(d, PLUGIN)
        assert out == "hello from the plugin\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_state_file_of_another_user_is_ignored(tmp_path):
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {USES_PLUGIN}\nobject {PLUGIN}\nend\n")
    os.chown(state, 65534, 65534)
    with learning_daemon(state) as d:
        assert "ignoring the learned objects in" in d.log_text() and "owned by another user" in d.log_text()
        assert "learned" not in d.status()
        _, err = run_plugin(d, PLUGIN)
        assert "loaded before main: no" in err


def test_a_learned_object_deleted_since_is_pruned(tmp_path):
    gone = tmp_path / "gone.so"
    shutil.copy(PLUGIN, gone)
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {USES_PLUGIN}\nobject {gone}\nobject {PLUGIN}\nend\n")
    gone.unlink()
    with learning_daemon(state) as d:
        assert f"learned objects: {gone} no longer exists" in d.log_text()
        status = d.status()
        assert status["learned"] == [f"preloaded {USES_PLUGIN} {PLUGIN}"]
        _, err = run_plugin(d, PLUGIN)
        assert "loaded before main: yes" in err


def test_warm_up_runs_a_step_in_the_zygote_and_refuses_one_that_starts_a_thread(tmp_path):
    steps = "libhs-framework.so:framework_init,libhs-framework.so:framework_start_thread"
    with learning_daemon(tmp_path / "learned", "--warm-up", steps, "--no-learn") as d:
        status = d.status()
        assert status["warm-up"] == [
            "done libhs-framework.so:framework_init",
            "refused libhs-framework.so:framework_start_thread -- it starts a thread; "
            "the daemon forks and must stay single-threaded",
        ]
        assert len(os.listdir(f"/proc/{d.zygote_pid()}/task")) == 1
        with Served(d):
            out, err = run_plugin(d, PLUGIN)
        assert out == "hello from the plugin\n"
        # What a warm-up changes is visible to the program: that is its point (docs/limitations.md).
        assert "framework initialised before main: yes" in err
    assert "framework initialised before main: no" in run_plugin(None, PLUGIN)[1]


def test_a_warm_up_step_whose_trial_passed_is_not_tried_again_unless_it_then_starts_a_thread(tmp_path):
    """A step's passed trial is kept beside the learned file: the next zygote runs it without a
    throwaway child. One that then starts a thread after all ends that zygote, and the next one tries
    it first again and refuses it; clients are served throughout, by a single-threaded zygote."""
    flag = tmp_path / "start-a-thread"
    step = "libhs-framework.so:framework_thread_if_asked"
    env = dict(os.environ, HS_FRAMEWORK_THREAD_IF=str(flag))
    args = ["--app", str(USES_PLUGIN), "--learn-file", str(tmp_path / "learned"), "--warm-up", step, "--no-learn"]
    runtime = tmp_path / "runtime"  # the same at each start, as a service's: the step's environment
    runtime.mkdir(mode=0o700)
    for start in ("first", "second"):
        with private_daemon([], extra_args=args, env=env, runtime_dir=runtime) as d:
            assert d.status()["warm-up"] == [f"done {step}"]
            kept = "(its trial passed at an earlier start)" in d.log_text()
            assert kept == (start == "second"), d.log_text()
    assert (tmp_path / "warm-up").read_text().splitlines()[2] == f"passed {step}"
    # Another environment is another key: the step is tried first again.
    with private_daemon([], extra_args=args, env=dict(env, HS_ANOTHER_ENVIRONMENT="1"), runtime_dir=runtime) as d:
        assert d.status()["warm-up"] == [f"done {step}"]
        assert "(its trial passed at an earlier start)" not in d.log_text()
    with private_daemon([], extra_args=args, env=env, runtime_dir=runtime) as d:  # tried again, and kept
        assert d.status()["warm-up"] == [f"done {step}"]
    flag.touch()
    with private_daemon([], extra_args=args, env=env, runtime_dir=runtime) as d:
        status = wait_status(d, lambda s: s["warm-up"][0].startswith("refused"))
        assert status["warm-up"] == [
            f"refused {step} -- it starts a thread; the daemon forks and must stay single-threaded"
        ]
        assert "which its trial at an earlier start had not" in d.log_text()
        assert len(os.listdir(f"/proc/{d.zygote_pid()}/task")) == 1
        with Served(d):
            assert run_plugin(d, PLUGIN)[0] == "hello from the plugin\n"
    assert not (tmp_path / "warm-up").exists()  # nothing passed at that start


def test_warm_up_of_a_library_no_program_loads_is_refused(tmp_path):
    with learning_daemon(tmp_path / "learned", "--warm-up", "fontconfig") as d:
        assert d.status()["warm-up"] == [
            "refused fontconfig -- its library is not loaded (no registered program uses it)"
        ]


def test_an_unknown_warm_up_step_is_a_clear_error(tmp_path):
    from headstart.errors import HeadstartError

    with (
        pytest.raises(HeadstartError, match="warm-up: unknown step 'gtk' "),
        learning_daemon(tmp_path / "learned", "--warm-up", "gtk"),
    ):
        pass


FC_LIST = shutil.which("fc-list")


@pytest.mark.skipif(FC_LIST is None, reason="fontconfig's fc-list is not installed")
def test_fontconfig_warm_up_leaves_fc_list_output_unchanged(tmp_path):
    argv = [str(FC_LIST), "--format", "%{family}|%{style}|%{file}\n"]
    env = base_env(HOME=str(tmp_path))  # the same fontconfig cache directories for both
    expected = run_exec(argv, env=env)
    assert expected.returncode == 0 and expected.stdout
    args = ["--app", str(FC_LIST), "--warm-up", "fontconfig", "--no-learn"]
    with private_daemon([], extra_args=args, env=dict(os.environ, HOME=str(tmp_path))) as d:
        assert d.status()["warm-up"] == ["done fontconfig"]
        with Served(d):
            got = run_served(d, argv, env=env)
    assert (got.returncode, got.stdout, got.stderr) == (0, expected.stdout, expected.stderr)


JIT = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
/* Copies the plugin argv[1] to argv[2] (into place, by rename), loads it from there and closes it. */
int main(int argc, char **argv) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cp %s %s.new && mv %s.new %s", argv[1], argv[2], argv[2], argv[2]);
        if (argc != 3 || system(cmd) != 0)
                return 9;
        void *h = dlopen(argv[2], RTLD_NOW);
        int (*version)(void) = h ? (int (*)(void)) dlsym(h, "version") : NULL;
        if (!version)
                return 8;
        printf("version %d\n", version());
        return dlclose(h);
}
"""


def test_a_plugin_the_program_writes_before_it_loads_it_is_not_learned(tmp_path):
    # Preloaded, it would be what the next launch's dlopen of that path finds by name, whatever the
    # program writes there first: each launch got the plugin the one before it had written.
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    (tmp_path / "v.c").write_text("int version(void) { return VERSION; }\n")
    for v in (1, 2, 3):
        subprocess.run(["cc", "-shared", "-fPIC", f"-DVERSION={v}", "-o", str(tmp_path / f"libv{v}.so"),
                        str(tmp_path / "v.c")], check=True)  # fmt: skip
    (tmp_path / "jit.c").write_text(JIT)
    jit, target, state = tmp_path / "jit", tmp_path / "libjit.so", tmp_path / "learned"
    subprocess.run(["cc", "-o", str(jit), str(tmp_path / "jit.c")], check=True)
    with private_daemon([], extra_args=["--app", str(jit), "--learn-file", str(state)]) as d:
        for v in (1, 2, 3, 1, 2):
            argv = [str(jit), str(tmp_path / f"libv{v}.so"), str(target)]
            with Served(d):
                got = run_served(d, argv)
            assert (got.returncode, got.stdout) == (0, f"version {v}\n".encode()), got.stderr
            time.sleep(0.6)  # past the zygote's first look at the child's maps
    assert str(target) not in (state.read_text() if state.exists() else "")
