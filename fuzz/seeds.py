#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/ (committed; run again only to
renew them): real requests as headstart-run sends them, captured on a socket of our own; small
ELF files built here (a PIE, a shared library, a static program); configuration, schedule and pin
plan texts like those the docs show.

usage: seeds.py BUILD_DIR"""

from __future__ import annotations

import array
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = struct.Struct("<IHHI")


def capture_request(client: Path, argv: list[str], fds: list[int] | None = None) -> bytes:
    """One request as the client sends it: a byte with the number of fds, the header, the payload."""
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/socket"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        got: dict[str, object] = {}

        def serve() -> None:
            conn, _ = server.accept()
            data, nfds = b"", 0
            while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[3]:
                msg, anc, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(253 * 4))
                if not msg:
                    break
                data += msg
                for level, kind, payload in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        received = array.array("i", payload[: len(payload) - len(payload) % 4])
                        nfds += len(received)
                        for fd in received:
                            os.close(fd)
            got["request"] = bytes([nfds]) + data
            conn.close()  # no answer: the client execs, which a harmless program survives

        t = threading.Thread(target=serve)
        t.start()
        env = {"PATH": "/usr/bin:/bin", "LANG": "C"}  # nothing of this machine's environment in the corpus
        subprocess.run([str(client), "--socket", path, *argv], capture_output=True, timeout=30, pass_fds=fds or [],
                       start_new_session=True, env=env)  # fmt: skip
        t.join(timeout=30)
        server.close()
        return got["request"]  # type: ignore[return-value]


def elf_seeds(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "a.c"
        src.write_text('#include <stdio.h>\nint shared(int x) { return x + 1; }\nint main(void) { puts("hi"); }\n')
        for name, flags in (("pie", ["-pie", "-fPIE"]), ("shared", ["-shared", "-fPIC"])):
            subprocess.run(["gcc", "-Os", "-s", *flags, str(src), "-o", str(out / name)], check=True)
        start = Path(tmp) / "start.c"  # a static program without the C library: small, no PT_INTERP
        start.write_text("void _start(void) { __builtin_trap(); }\n")
        subprocess.run(["gcc", "-Os", "-s", "-static", "-nostdlib", "-no-pie", str(start), "-o", str(out / "static")],
                       check=True)  # fmt: skip


def main() -> int:
    build = Path(sys.argv[1]).resolve()
    corpus = HERE / "corpus"
    for name in ("request", "elf", "config", "schedule", "pin-plan"):
        (corpus / name).mkdir(parents=True, exist_ok=True)
    client = build / "headstart-run"
    (corpus / "request/echo").write_bytes(capture_request(client, ["/bin/echo", "hello"]))
    (corpus / "request/env-fds").write_bytes(capture_request(client, ["/usr/bin/env"], fds=[0, 1, 2]))
    elf_seeds(corpus / "elf")
    (corpus / "config/example").write_bytes((HERE.parent / "packaging/headstart.conf.example").read_bytes())
    (corpus / "config/settings").write_text(
        "app = /bin/true\nwarm = /bin/true\npool = 2\nwarm-up = fontconfig,gdk-pixbuf\nterminal = /bin/true\n"
        "schedule = /bin/true policy=fifo priority=5 cpus=0 nice=1 cpu-max=20ms/100ms cpuset=0\n"
        "learn = no\nrefresh-launches = 100\nmax-children = 8\n"
    )
    for i, line in enumerate(
        (
            "/bin/true policy=fifo priority=50 cpus=0-1,3 nice=-5 uclamp-min=128 uclamp-max=512",
            "/bin/true policy=deadline runtime=300us deadline=1ms period=1ms",
            "/bin/true policy=batch nice=10 cpu-max=20ms/100ms cpuset=0",
            "/bin/true cpu-max=max/100ms",
        )
    ):
        (corpus / f"schedule/{i}").write_text(line)
    (corpus / "pin-plan/plan").write_text(
        "headstart-pin-plan 2\nprogram 0 3 /bin/true\nprogram 1 1 /bin/false\nfile 4096 /bin/true\n"
        "range 0 4096 0 1\nfile 10 /etc/hostname\nend\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
