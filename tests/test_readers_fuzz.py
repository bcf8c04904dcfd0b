"""Property tests (Hypothesis) of the readers of files that come from elsewhere: the probe's trace
(written on a device, read on a host) and boot logs (a serial console, dmesg, systemd-analyze). Any
input gives a result or a HeadstartError, the one-line error the command prints; never another
exception, which would print a traceback."""

from __future__ import annotations

import json

from headstart.boot import logs
from headstart.errors import HeadstartError
from headstart.profiling import timeline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EVENTS = ["start", "map", "relocated", "constructors_done", "main", "exit", "binding", "load_begin", "load_end"]
KEYS = ["t", "launch_start", "via", "from", "to", "before_main", "after_main", "path", "name",
        "index", "needed_by", "needed_as", "size", "kind"]  # fmt: skip
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                   st.lists(st.integers(), max_size=3))  # fmt: skip
RECORD = st.fixed_dictionaries(
    {"pid": st.sampled_from([1, 2, "1"]), "event": st.sampled_from([*EVENTS, "other"])},
    optional={k: VALUES for k in KEYS},
)
LINE = st.one_of(RECORD.map(json.dumps), st.text(max_size=40), VALUES.map(json.dumps))
FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.lists(LINE, max_size=12))
def test_a_probe_trace_is_read_or_refused_in_one_line(lines):
    try:
        timeline.parse(lines)
    except HeadstartError as e:
        assert "\n" not in str(e)


@FAST
@given(st.text(max_size=2000))
def test_any_boot_log_text_is_read(text):
    log = logs._read_one("console.log", text)  # what `headstart boot analyze` does with each file
    assert all(line.source.startswith("console.log:") for line in log.lines)


BOOT_LINES = st.sampled_from([
    "[    0.000000] Linux version 6.1.0 (gcc)", "[    1.234567] Run /init as init process",
    "[12:00:00.123] U-Boot 2023.01", "Startup finished in 1.234s (kernel) + 2.5s (userspace) = 3.7s",
    "graphical.target reached after 3.456s in userspace", "  1.234s systemd-udev-settle.service",
    "# headstart boot record 115200 baud", "<6>[    2.000000] random: crng init done", "",
])  # fmt: skip


@FAST
@given(st.lists(st.one_of(BOOT_LINES, st.text(max_size=60)), max_size=30))
def test_boot_logs_made_of_real_lines_and_noise_are_read(lines):
    logs._read_one("console.log", "\n".join(lines))
