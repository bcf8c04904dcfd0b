"""Reading a file a user gives a command (a profile, a trace, a boot log), with a bound on its size:
`/dev/zero`, a FIFO that never ends or a huge file is refused in one line after MAX_BYTES + 1 bytes,
never read whole into memory. docs/schema/README.md documents the bound."""

from __future__ import annotations

from pathlib import Path

from headstart.errors import HeadstartError

MAX_BYTES = 256 << 20  # far above any profile, trace or boot log headstart writes (a few MiB)


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    limit = MAX_BYTES if limit is None else limit
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # one byte more than allowed says the file is too big
    except OSError as e:
        raise HeadstartError(f"cannot read {path}: {e.strerror}") from e
    if len(data) > limit:
        raise HeadstartError(f"{path}: larger than {_size(limit)}, the most headstart reads from one file")
    return data


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_text(path: Path, limit: int | None = None) -> str:
    """The file as UTF-8 text (what headstart writes: its JSON is ASCII); any other bytes are an error."""
    data = read_bytes(path, limit)
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise HeadstartError(f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from e
