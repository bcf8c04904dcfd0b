"""Where the main thread's time from main to ready goes, in the traced launch, split by what the
zygote could take over and what it never can (issue 27).

Every moment of the main thread from main to the end of the trace is either in a system call or in
the stretch between two (computation). Each is put in one kind:
- never takeable by the zygote, per launch: the display connection (calls on its socket: the connection's setup,
  round trips, the first frame sent; poll on it, waiting for the server), the session bus's
  connections (D-Bus, the accessibility bus), and waiting for the program's own threads (a futex
  wait: a thread cannot be started ahead in a forking zygote). For a GTK program what it does on the first
  two as its toolkit starts (the connection, its first round trips, the settings read from the bus)
  a child prepared ahead takes (headstartd --prepare-display). A wait that ends within WOKEN_WITHIN_S of
  another thread's call on the display, the bus, fontconfig's files or an object being loaded is
  counted as that kind instead (GLib's D-Bus worker, Qt's xcb thread, Pango's font thread);
- could be taken: the loader mapping and relocating objects (`.so` files opened, mapped, made
  read-only, and the stretches that end with an object's RELRO made read-only), which learned preload
  takes; fontconfig's configuration and caches, which `--warm-up fontconfig` takes;
- the rest, as is: other system calls (files, memory), and computation, which holds both what a
  warm-up could do ahead (class initialisation, parsing) and what it never can (laying out and
  drawing the first frame for that display); the trace cannot tell them apart.

The sockets are named by their connect: an X server's (`.X11-unix`), a Wayland compositor's (a
`wayland-` socket), a bus's (`bus` in its path). Tracing slows each system call (tens of µs), so the
shares of calls are inflated against computation: they rank, they are not a measurement; `ms` are
traced milliseconds.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from typing import Any

from headstart.profiling.after_main_trace import FONTCONFIG
from headstart.profiling.syscalls import AddressMap, Call

NEVER = ("display", "session bus", "waiting for its threads")
COULD = ("loading objects", "fontconfig")
AS_IS = ("other system calls", "computation")
KINDS = (*NEVER, *COULD, *AS_IS)

_CONNECT = re.compile(r'^\(\d+<(socket:\[\d+\])>.*sun_path=@?"([^"]*)"')
_SOCKET = re.compile(r"socket:\[\d+\]")
_RELRO = re.compile(r"^\(0x[0-9a-f]+, \d+, PROT_READ\)\s+=\s+0")
_OBJECT = re.compile(r"\.so(\.[\d.]+)?$")
_WAITS = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait")


def socket_kinds(calls: list[Call]) -> dict[str, str]:
    """Each Unix socket connected, by strace's name for it (`socket:[inode]`): display or session bus."""
    found = {}
    for c in calls:
        if c.name == "connect" and (m := _CONNECT.match(c.rest)):
            path = m.group(2)
            if ".X11-unix" in path or "wayland" in path:
                found[m.group(1)] = "display"
            elif "bus" in path:
                found[m.group(1)] = "session bus"
    return found


# A wait of the main thread (futex) that ends this soon after another thread's call of a known kind
# ended waited for that work: GLib's D-Bus worker thread does the bus round trips of the main
# thread's synchronous calls (a GtkApplication registering its name), Qt's xcb thread reads X, and
# Pango's font thread reads fontconfig's files. The first kind found, in this order, names the wait.
WOKEN_WITHIN_S = 0.002
WAKERS = ("display", "session bus", "fontconfig", "loading objects")


def _socket_kind(c: Call, sockets: dict[str, str]) -> str | None:
    named = {sockets[s] for s in _SOCKET.findall(c.rest) if s in sockets}
    return ("display" if "display" in named else "session bus") if named else None


def _own_kind(c: Call, sockets: dict[str, str], mapped: AddressMap) -> str:
    """A call's kind by what it works on, whichever thread makes it."""
    if named := _socket_kind(c, sockets):
        return named
    path = c.path() or mapped.object_of(c) or ""
    if _OBJECT.search(path) or (c.name == "mprotect" and _RELRO.match(c.rest) and path):
        return "loading objects"
    if FONTCONFIG.search(path):
        return "fontconfig"
    return "other system calls"


def _woken_by(wait: Call, others: list[tuple[float, str]]) -> str:
    """What a wait for another thread was for: the known kind of work another thread ended just
    before it ended, else its threads' own work."""
    kinds = {kind for end, kind in others if wait.end - WOKEN_WITHIN_S <= end <= wait.end}
    return next((k for k in WAKERS if k in kinds), "waiting for its threads")


# The futex operations that wait (for a lock or a condition another thread signals); FUTEX_WAKE and
# FUTEX_REQUEUE only wake others, and a program with one thread makes those too (a one-time
# initialisation's lock), so they are the call's own time.
_FUTEX_WAIT = re.compile(r"^\(0x[0-9a-f]+, FUTEX_(WAIT|LOCK_PI|TRYLOCK_PI|WAIT_REQUEUE_PI)")


def _call_kind(c: Call, sockets: dict[str, str], mapped: AddressMap, others: list[tuple[float, str]]) -> str:
    if c.name == "futex" and _FUTEX_WAIT.match(c.rest):
        return _woken_by(c, others)
    return _own_kind(c, sockets, mapped)


def shares(calls: list[Call], all_calls: list[Call]) -> dict[str, Any] | None:
    """The main thread's time from main to ready by kind (traced ms and share of the whole), and
    the sums of what the zygote never can take and what it could. `calls` are those after main."""
    if not calls:
        return None
    main, pid = calls[0].start, calls[0].pid
    end = max(c.end for c in calls)
    mapped, sockets = AddressMap(all_calls), socket_kinds(all_calls)
    mine = [c for c in calls if c.pid == pid]
    # Other threads' calls of a kind that may wake the main thread: when each ended, and its kind.
    others = [(c.end, k) for c in calls if c.pid != pid and (k := _own_kind(c, sockets, mapped)) in WAKERS]
    ms: dict[str, float] = defaultdict(float)
    for c in mine:
        ms[_call_kind(c, sockets, mapped, others)] += c.ms
    for a, b in itertools.pairwise(mine):
        relocating = b.name == "mprotect" and _RELRO.match(b.rest) and mapped.object_of(b)
        ms["loading objects" if relocating else "computation"] += max(0.0, b.start - a.end) * 1000
    ms["computation"] += max(0.0, end - mine[-1].end) * 1000  # from its last call to ready
    total = (end - main) * 1000
    rows = [{"kind": k, "ms": ms[k], "share": ms[k] / total if total else 0.0} for k in KINDS]
    return {
        "traced_ms": total,
        "kinds": rows,
        "never_share": sum(r["share"] for r in rows if r["kind"] in NEVER),
        "could_share": sum(r["share"] for r in rows if r["kind"] in COULD),
        "as_is_share": sum(r["share"] for r in rows if r["kind"] in AS_IS),
    }
