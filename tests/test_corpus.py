"""Unmodified programs from Debian packages, run through the daemon and by exec with the same
arguments and stdin: same stdout, stderr and exit status, byte for byte. The daemon serves most of
them; the ones it sends to exec say why, and still run correctly.

The packages are installed by `make deps` (CORPUS_PACKAGES in the Makefile)."""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
import sys
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import Served, base_env, run_exec, run_served
from headstart.daemon import RunningDaemon, private_daemon
from test_fallback import assert_fallback, debug_env


@dataclass
class Case:
    program: str
    args: list[str]
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)


UTF8_TZ = {"LC_ALL": "C.UTF-8", "TZ": "America/New_York"}

# {TEXT}, {TEXT2}, {PPM}, {WAV}, {JSON}, {XML}, {JPEG}, {DIR} are files made by the `inputs` fixture.
CORPUS = {
    "gzip": Case("gzip", ["-c", "-9", "{TEXT}"]),
    "bzip2": Case("bzip2", ["-c", "{TEXT}"]),
    "xz": Case("xz", ["-c", "-e", "{TEXT}"]),
    "zstd": Case("zstd", ["-c", "-q", "-19", "{TEXT}"]),
    "lz4": Case("lz4", ["-c", "-q", "{TEXT}"]),
    "sed": Case("sed", ["-n", "s/o/0/gp", "{TEXT}"]),
    "grep": Case("grep", ["-n", "-i", "--color=never", "the", "{TEXT}"]),
    "sort": Case("sort", ["-r", "-k2", "{TEXT}"], env=UTF8_TZ),
    "wc": Case("wc", ["-lwmc", "{TEXT}"], env=UTF8_TZ),
    "date": Case("date", ["-d", "@1700000000", "+%c %Z %z"], env=UTF8_TZ),
    "ls": Case("ls", ["-l", "--time-style=+%Y-%m-%d %H:%M", "{DIR}"], env=UTF8_TZ),
    "diff": Case("diff", ["-u", "--label=a", "--label=b", "{TEXT}", "{TEXT2}"]),
    "od": Case("od", ["-A", "x", "-t", "x1z", "{TEXT}"]),
    "sha256sum": Case("sha256sum", ["{TEXT}", "{TEXT2}"]),
    "cjpeg": Case("cjpeg", ["-quality", "80", "-optimize", "{PPM}"]),
    "lame": Case("lame", ["--quiet", "-b", "128", "{WAV}", "-"]),
    "flac": Case("flac", ["-s", "-c", "--no-seektable", "{WAV}"]),
    "opusenc": Case("opusenc", ["--quiet", "--serial", "42", "{WAV}", "-"]),
    "cwebp": Case("cwebp", ["-quiet", "{PPM}", "-o", "-"]),
    "sqlite3": Case(
        "sqlite3",
        [":memory:"],
        b"create table t(a, b); insert into t values (1, 'one'), (2, 'two');\n"
        b"select b, a * 21 from t order by a desc;\nselect nosuchfunction();\n",
    ),
    "lua5.4": Case("lua5.4", ["-e", "print(string.format('%5.3f', math.pi)); os.exit(3)"]),
    "bc": Case("bc", ["-l", "-q"], b"scale=30; 4*a(1)\nsqrt(2)\n"),
    "jq": Case("jq", ["-c", ".items | map(. * 2)", "{JSON}"]),
    "xmllint": Case("xmllint", ["--format", "{XML}"]),
    "file": Case("file", ["-b", "{PPM}", "{WAV}", "{JSON}"]),
    "tar": Case(
        "tar",
        ["-cf", "-", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner", "-C", "{DIR}", "."],
    ),
    "find": Case("find", ["{DIR}", "-type", "f", "-name", "*.txt"]),
    "m4": Case("m4", [], b"define(`greet', `hello $1')greet(`world')\nundefined_macro\n"),
    "mawk": Case("mawk", ["{ n += NF } END { print NR, n }", "{TEXT}"]),
    "bash": Case("bash", ["-c", 'set -- a b c; echo "$# args: $*"; printf "%05d\\n" 42; exit 7']),
    "xxd": Case("xxd", ["-l", "64", "{TEXT}"]),
    "qpdf": Case("qpdf", ["--version"]),
    "exiv2": Case("exiv2", ["-q", "pr", "{JPEG}"]),
    "perl": Case("perl", ["-e", "print join(',', map { $_ * 2 } 1..5), qq{\\n}"]),
    "gawk": Case("gawk", ["{ print toupper($1) }", "{TEXT}"]),
}

# The ones the daemon must send to exec, with what its reason says.
REFUSED = {
    "perl": b"thread-local storage",
    "gawk": b"not position-independent",
}

TEXT = """The quick brown fox jumps over the lazy dog.
Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.
lorem ipsum dolor sit amet
the end of the text, of course
"""


def write_wav(path: Path) -> None:
    rate = 22050
    frames = b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(rate // 2))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("corpus")
    (d / "text.txt").write_text(TEXT)
    (d / "text2.txt").write_text(TEXT.replace("lazy", "sleepy") + "one more line\n")
    width, height = 64, 48
    pixels = b"".join(bytes(((x * 4) % 256, (y * 5) % 256, (x + y) % 256)) for y in range(height) for x in range(width))
    (d / "image.ppm").write_bytes(b"P6\n%d %d\n255\n" % (width, height) + pixels)
    write_wav(d / "sound.wav")
    (d / "data.json").write_text('{"items": [1, 2, 3.5], "name": "corpus"}')
    (d / "doc.xml").write_text('<?xml version="1.0"?><doc><a x="1">text</a><b/></doc>')
    jpeg = subprocess.run(["cjpeg", str(d / "image.ppm")], capture_output=True, check=True).stdout
    (d / "image.jpg").write_bytes(jpeg)
    tree = d / "tree"
    (tree / "sub").mkdir(parents=True)
    for name in ("a.txt", "sub/b.txt", "sub/c.dat"):
        (tree / name).write_text(name * 3)
    return {
        "TEXT": str(d / "text.txt"),
        "TEXT2": str(d / "text2.txt"),
        "PPM": str(d / "image.ppm"),
        "WAV": str(d / "sound.wav"),
        "JSON": str(d / "data.json"),
        "XML": str(d / "doc.xml"),
        "JPEG": str(d / "image.jpg"),
        "DIR": str(tree),
    }


def program_path(name: str) -> str:
    found = shutil.which(name, path="/usr/bin:/bin")
    if not found:
        pytest.fail(f"{name} is missing: `make deps` installs the corpus packages")
    return found


@pytest.fixture(scope="module", params=["preload", "warm"])
def corpus_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    """Every corpus program registered: with --app, or with --warm (the program image loaded in the
    daemon too; the refused ones stay exec)."""
    option = "--app" if request.param == "preload" else "--warm"
    extra = [arg for name in CORPUS for arg in (option, program_path(name))]
    with private_daemon([], extra_args=extra) as d:
        yield d
    assert d.process.returncode == 0, d.log_text()


def argv_of(case: Case, inputs: dict[str, str]) -> list[str]:
    def fill(arg: str) -> str:
        for key, value in inputs.items():
            arg = arg.replace("{" + key + "}", value)
        return arg

    return [program_path(case.program), *(fill(a) for a in case.args)]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_program_same_as_exec(corpus_daemon, inputs, name):
    case = CORPUS[name]
    argv = argv_of(case, inputs)
    if name in REFUSED:
        assert_fallback(corpus_daemon, argv, REFUSED[name], env=debug_env(**case.env))
        return
    env = base_env(**case.env)
    want = run_exec(argv, env=env, input=case.stdin)
    with Served(corpus_daemon):
        got = run_served(corpus_daemon, argv, env=env, input=case.stdin)
    assert got.returncode == want.returncode
    assert got.stderr == want.stderr
    assert got.stdout == want.stdout
    assert want.stdout or want.stderr


def headstart_check(*programs: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "headstart", "check", "--json", *programs], capture_output=True)
    assert done.returncode in (0, 1), done.stderr  # 1: some are not served
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_check_agrees_with_the_daemon():
    """`headstart check` says exec for exactly the programs the daemon refused above, with the same
    reasons, and warm for the others: C++ programs too, whose static destructors their own launches
    register again (exiv2's)."""
    verdicts = headstart_check(*(program_path(CORPUS[name].program) for name in sorted(CORPUS)))
    by_name = dict(zip(sorted(CORPUS), verdicts, strict=True))
    refused = {name for name, v in by_name.items() if v["mode"] == "exec"}
    assert refused == set(REFUSED)
    for name in REFUSED:
        assert REFUSED[name].decode() in by_name[name]["reason"]
    for name in set(CORPUS) - refused:
        assert by_name[name]["modes"] == ["preload", "warm"], by_name[name]
    served_share = 1 - len(refused) / len(CORPUS)
    assert served_share > 0.8
