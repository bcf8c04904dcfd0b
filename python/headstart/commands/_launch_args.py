"""The options of commands that launch a program themselves to time it (order, lazy): when it is
ready, how long it may take, and the program with its arguments."""

from __future__ import annotations

import argparse

from headstart.commands._regex import regex, seconds, whole_number
from headstart.profiling.launch import LaunchOptions


def add_launch_arguments(p: argparse.ArgumentParser) -> None:
    ready = p.add_mutually_exclusive_group()
    ready.add_argument(
        "--ready", type=regex, metavar="REGEX", help="ready at a line of output matching REGEX (default: exit)"
    )
    ready.add_argument(
        "--ready-window",
        action="store_true",
        help="ready when its first window shows: mapped on $DISPLAY, or its first frame on $WAYLAND_DISPLAY",
    )
    p.add_argument("--timeout", type=seconds, default=60.0, help="seconds a launch may take to be ready (default 60)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS...")


def add_read_ahead_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--read-ahead-kb",
        type=whole_number(0, 1 << 30),
        metavar="KIB",
        help="the storage's readahead during the timed launches (root), as on a device (default: as it is)",
    )


def launch_options(args: argparse.Namespace, argv: list[str]) -> LaunchOptions:
    return LaunchOptions(argv, args.ready, args.timeout, ready_window=args.ready_window)
