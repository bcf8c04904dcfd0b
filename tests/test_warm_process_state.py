"""A warm program's constructors run once, in the daemon. What they set in the process itself (not
in a library's data) was then the daemon's: each launch's child reset it to the client's, so main
did not see it (SIGPIPE ignored, a signal handler, the umask, the working directory, a file opened
for main to write to, a timer), or every program the daemon served shared it (the C library's
locale, a fork handler), or the daemon declined every client after (no_new_privs) or could launch
nothing (a lower RLIMIT_NOFILE). What they wrote on stderr reached the daemon's log, not each
launch's. What they wrote to a library variable the program copies (opterr) was lost: each launch
filled the copy again from the library's. A library they loaded stayed in every program the daemon
served. Such a program is served in preload mode now (a new user's trial, 2026-11-29)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Served, base_env, bin_path
from headstart.daemon import private_daemon

CTOR = "__attribute__((constructor)) static void c(void) { %s }\n"
SOURCES = {
    "sigpipe": (
        "#include <signal.h>\n#include <stdio.h>\n"
        + CTOR % "signal(SIGPIPE, SIG_IGN);"
        + "int main(void) { struct sigaction sa; sigaction(SIGPIPE, NULL, &sa);\n"
        '  puts(sa.sa_handler == SIG_IGN ? "ignored" : "default"); return 0; }\n',
        "a signal's disposition",
    ),
    "handler": (
        "#include <signal.h>\n#include <unistd.h>\nstatic void h(int s) { (void) s; _exit(3); }\n"
        + CTOR % "signal(SIGTERM, h);"
        + "int main(void) { raise(SIGTERM); return 0; }\n",
        "a signal's disposition",
    ),
    "mask": (
        "#include <signal.h>\n#include <stdio.h>\n"
        + CTOR % "sigset_t s; sigemptyset(&s); sigaddset(&s, SIGUSR1); sigprocmask(SIG_BLOCK, &s, NULL);"
        + "int main(void) { sigset_t s; sigprocmask(SIG_BLOCK, NULL, &s);\n"
        '  printf("%d\\n", sigismember(&s, SIGUSR1)); return 0; }\n',
        "the signal mask",
    ),
    "umask": (
        "#include <stdio.h>\n#include <sys/stat.h>\n"
        + CTOR % "umask(077);"
        + 'int main(void) { printf("%03o\\n", umask(0)); return 0; }\n',
        "the umask",
    ),
    "chdir": (
        "#include <stdio.h>\n#include <unistd.h>\n"
        + CTOR % 'chdir("/");'
        + "int main(void) { char b[256]; puts(getcwd(b, sizeof b)); return 0; }\n",
        "the working or root directory",
    ),
    "opens": (
        "#include <stdio.h>\nstatic FILE *f;\n"
        + CTOR % 'f = fopen("/dev/null", "w");'
        + 'int main(void) { fputs("x", f); printf("%d\\n", fflush(f)); return 0; }\n',
        "the open file descriptors",
    ),
    "alarm": (
        "#include <unistd.h>\n" + CTOR % "alarm(1);" + "int main(void) { sleep(3); return 0; }\n",
        "a timer of the process",
    ),
    "locale": (
        "#include <locale.h>\n#include <stdio.h>\n"
        + CTOR % 'setlocale(LC_ALL, "C.UTF-8");'
        + "int main(void) { puts(setlocale(LC_ALL, NULL)); return 0; }\n",
        "the C library's locale",
    ),
    "nnp": (
        "#include <stdio.h>\n#include <sys/prctl.h>\n"
        + CTOR % "prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);"
        + 'int main(void) { printf("%d\\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)); return 0; }\n',
        "a process attribute",
    ),
    "nofile": (
        "#include <stdio.h>\n#include <sys/resource.h>\n"
        + CTOR % "struct rlimit r; getrlimit(RLIMIT_NOFILE, &r); r.rlim_cur = 100; setrlimit(RLIMIT_NOFILE, &r);"
        + "int main(void) { struct rlimit r; getrlimit(RLIMIT_NOFILE, &r);\n"
        '  printf("%lu\\n", (unsigned long) r.rlim_cur); return 0; }\n',
        "a resource limit",
    ),
    "atfork": (
        "#include <pthread.h>\n#include <unistd.h>\n#include <sys/wait.h>\n"
        'static void ch(void) { (void) !write(1, "handler\\n", 8); }\n'
        + CTOR % "pthread_atfork(NULL, NULL, ch);"
        + "int main(void) { pid_t p = fork(); if (!p) _exit(0); waitpid(p, 0, 0); return 0; }\n",
        "fork handlers",
    ),
    # A library variable the program copies (a copy relocation), which each launch filled again
    # from the library's own: main saw opterr 1, and getopt complained.
    "opterr": (
        "#include <stdio.h>\n#include <unistd.h>\n"
        + CTOR % "opterr = 0;"
        + 'int main(void) { char *a[] = { "p", "-z", NULL }; printf("%c\\n", getopt(2, a, "a")); return 0; }\n',
        "a library's variable that the program copies",
    ),
    # A library loaded by a constructor stayed in the daemon, in every program it served.
    "plugin": (
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        + CTOR % 'dlopen("libz.so.1", RTLD_NOW);'
        + 'int main(void) { puts(dlopen("libz.so.1", RTLD_NOLOAD) ? "loaded" : "not"); return 0; }\n',
        "its constructors load a library",
    ),
    "warns": (
        "#include <stdio.h>\n" + CTOR % 'fprintf(stderr, "warning\\n");' + "int main(void) { return 0; }\n",
        "its constructors write output",
    ),
}
BYSTANDER = (
    "#include <locale.h>\n#include <stdio.h>\n#include <unistd.h>\n#include <sys/wait.h>\n"
    "int main(void) { puts(setlocale(LC_ALL, NULL)); fflush(stdout);\n"
    "  pid_t p = fork(); if (!p) _exit(0); waitpid(p, 0, 0); return 0; }\n"
)


def build(tmp: Path, name: str, text: str) -> Path:
    (tmp / f"{name}.c").write_text(text)
    subprocess.run(["cc", "-O2", "-o", str(tmp / name), str(tmp / f"{name}.c")], check=True)
    return tmp / name


def test_constructors_that_change_the_process_are_not_warm(tmp_path):
    if not shutil.which("cc"):
        pytest.skip("needs cc")
    programs = {name: build(tmp_path, name, text) for name, (text, _) in SOURCES.items()}
    bystander = build(tmp_path, "bystander", BYSTANDER)
    extra = ["--pool", "1", *(arg for p in programs.values() for arg in ("--warm", str(p)))]
    with private_daemon([bystander], extra_args=extra) as d:
        status = d.status()["program"]
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        for program in [bystander, *programs.values(), bystander]:
            by_exec = subprocess.run([str(program)], capture_output=True, env=base_env())
            with Served(d):
                served = subprocess.run([*client, str(program)], capture_output=True, env=base_env())
            assert (served.returncode, served.stdout, served.stderr) == (
                by_exec.returncode,
                by_exec.stdout,
                by_exec.stderr,
            ), program
    for name, (_, why) in SOURCES.items():
        (line,) = [s for s in status if s.split(" -- ")[0].endswith(f"/{name}")]
        assert line.startswith("preload ") and why in line, line
