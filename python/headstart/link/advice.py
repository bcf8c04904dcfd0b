"""Link-time changes that would cut what the loader does for a launch, each given only where its
conditions hold in this launch, with the saving expected in lookups, relocations, bytes and µs.

Every estimate is counts times this launch's own costs (analysis.Costs): a lookup's cost measured
with LD_BIND_NOW, or bounded by the relocation phase over its lookups when that cannot be measured.
docs/linking.md says what each check looks at and what it cannot see."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from headstart.link.analysis import Costs, _key
from headstart.link.collect import Counted
from headstart.link.objects import PAGE, RELA_SIZE, ObjectFacts

MIN_RELATIVE = 100  # fewer relative relocations than this: packing them saves less than a page
MIN_PLT = 20
CXX_RUNTIME = "libstdc++.so.6"
GCC_RUNTIME = "libgcc_s.so.1"
# Symbols that programs and tools replace by defining their own (LD_PRELOAD'ed allocators, a C++
# program's own operator new): a library must keep looking them up, whatever else it binds to itself.
_INTERPOSED = re.compile(
    r"^(malloc|free|calloc|realloc|reallocarray|memalign|posix_memalign|aligned_alloc|valloc|pvalloc"
    r"|malloc_usable_size|_Znw\w*|_Zna\w*|_Zdl\w*|_Zda\w*)$"
)


@functools.cache
def toolchain() -> dict[str, Any]:
    """What this machine's GNU ld and glibc support."""
    try:
        helptext = subprocess.run(["ld", "--help"], capture_output=True, text=True, timeout=30).stdout
        version = subprocess.run(["ld", "--version"], capture_output=True, text=True, timeout=30).stdout.split("\n")[0]
    except (OSError, subprocess.TimeoutExpired):
        helptext, version = "", ""
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    m = re.search(r"(\d+)\.(\d+)", libc)
    return {
        "ld": version.strip() or None,
        "glibc": libc.split()[-1] if libc else None,
        "pack_relative_relocs": "pack-relative-relocs" in helptext,
        "export_dynamic_symbol": "--export-dynamic-symbol" in helptext,
        "glibc_relr": bool(m and (int(m.group(1)), int(m.group(2))) >= (2, 36)),
    }


def _item(
    kind: str,
    row: dict[str, Any],
    flags: list[str],
    holds: bool,
    why: str,
    *,
    lookups: int = 0,
    relocations: int = 0,
    table_bytes: int = 0,
    dirty_bytes: int = 0,
    us: float | None = 0.0,
    at_most: bool = False,
    remove: list[str] | None = None,
    drops: list[str] | None = None,
    symbols: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "advice": kind,
        "object": row["name"],
        "path": row["path"],
        "yours": row["yours"],
        "flags": flags,
        "remove_flags": remove or [],
        "holds": holds,
        "why": why,
        "drops": drops or [],
        "symbols": symbols or [],  # the --dynamic-list, version script or export list the flags name
        "saves": {
            "lookups": lookups,
            "relocations": relocations,
            "table_bytes": table_bytes,
            "dirty_bytes": dirty_bytes,
            "us": None if us is None else round(us, 1),
            "us_at_most": at_most,
        },
    }


def _whose(row: dict[str, Any]) -> str:
    return "" if row["yours"] else " (a system library: only whoever builds it can relink it)"


def advise(data: dict[str, Any], facts: dict[str, ObjectFacts], counted: Counted, cost: Costs) -> list[dict[str, Any]]:
    rows = data["objects"]
    by_path = {r["path"]: r for r in rows}
    program = next((r for r in rows if r["program"]), rows[0])
    tools = toolchain()
    everything = list(facts.values())  # the objects mapped before main and those dlopened later
    out: list[dict[str, Any]] = []
    lookup_us = cost.lookup_ns / 1000
    at_most = not cost.lookup_measured
    self_bound: dict[str, set[str]] = {}
    for b in counted.bindings:
        if _key(b.source) == _key(b.target):
            self_bound.setdefault(_key(b.source), set()).add(b.symbol)

    def needers(soname: str) -> list[ObjectFacts]:
        return [f for f in everything if soname in f.needed]

    for path, row in by_path.items():
        f = facts[path]
        # Packed relative relocations (DT_RELR).
        if not f.relr and f.relative_in_rela >= MIN_RELATIVE:
            saved = f.relative_in_rela * RELA_SIZE - f.relr_bytes_if_packed
            ok = tools["pack_relative_relocs"] and tools["glibc_relr"]
            why = (
                f"{f.relative_in_rela:,} relative relocations in 24-byte RELA entries; packed, "
                f"{f.relr_bytes_if_packed:,} bytes of bitmaps. The loader still applies each one: it reads "
                f"{saved / 1024:,.0f} KiB less. Needs GNU ld 2.38+ and glibc 2.36+ wherever it runs "
                f"(this machine: {tools['ld'] or 'no ld'}, glibc {tools['glibc']})"
            ) + _whose(row)
            out.append(
                _item(
                    "pack-relative-relocs",
                    row,
                    ["-Wl,-z,pack-relative-relocs"],
                    ok,
                    why,
                    table_bytes=saved,
                    us=saved / PAGE * cost.page_ns / 1000,
                )
            )
        # -Bsymbolic: a library's lookups of its own symbols, where nothing else defines them.
        # Every symbol it defines and refers to through a relocation: those bound to another object
        # in this launch (interposed) are found here too, not only those it bound to itself.
        own = self_bound.get(_key(path), set()) | {r.symbol for r in [*f.symbolic, *f.plt] if r.own}
        if not row["program"] and own:
            others = [g for g in everything if g.path != path]
            defined_elsewhere = {s for s in own if any(s in g.exported for g in others)}
            interposed = {s for s in own if _INTERPOSED.match(s)}
            keep = defined_elsewhere | interposed
            binds = sum(
                1
                for b in counted.bindings
                if b.before_main
                and _key(b.source) == _key(path)
                and _key(b.target) == _key(path)
                and b.symbol not in keep
            )
            if binds:
                flags = (
                    ["-Wl,-Bsymbolic"] if not keep else ["-Wl,-Bsymbolic", f"-Wl,--dynamic-list=<{len(keep)} symbols>"]
                )
                why = (
                    f"{binds:,} lookups before main find a symbol {row['name']} defines itself; bound at link "
                    f"time they become relative relocations. Checked: none of the {len(own):,} symbols it defines and "
                    f"refers to is defined by another of the {len(everything)} objects of this launch"
                )
                if keep:
                    why = (
                        f"{binds:,} lookups before main find a symbol {row['name']} defines itself. "
                        f"{len(keep)} of the {len(own):,} symbols it defines and refers to must stay interposable "
                        f"({', '.join(sorted(keep)[:4])}{'...' if len(keep) > 4 else ''}: defined by another "
                        f"object of this launch, or replaced by programs by convention): list them in "
                        f"--dynamic-list, which binds the rest locally"
                    )
                why += "; -fno-semantic-interposition does the same at compile time" + _whose(row)
                out.append(
                    _item(
                        "Bsymbolic",
                        row,
                        flags,
                        True,
                        why,
                        lookups=binds,
                        us=binds * lookup_us,
                        at_most=at_most,
                        symbols=sorted(keep),
                    )
                )
        # Symbols exported that no other object imports.
        importers = [g for g in everything if g.path != path]
        imported = {s for g in importers for s in g.imported} | {
            b.symbol for b in counted.bindings if _key(b.target) == _key(path) and _key(b.source) != _key(path)
        }
        unused = [
            s
            for s in f.exported
            if s not in imported
            and s != "main"
            and not s.startswith("_fini")
            and s not in ("_init", "_fini", "_edata", "_end", "__bss_start")
        ]
        if row["yours"] and len(unused) >= 50:
            names = sum(len(s) + 1 for s in unused)
            fill = f.bloom_fill or 0.0
            if row["program"]:
                keep = sorted(
                    {"main"} | (set(f.exported) - set(unused) - {"_init", "_fini", "_edata", "_end", "__bss_start"})
                )
                flags = [f"-Wl,--export-dynamic-symbol={s}" for s in keep[:8]]
                if len(keep) > 8:
                    flags = [f"-Wl,--dynamic-list=<{len(keep)} symbols>"]
                scope_lookups = data["loader"]["bindings_before_main"]
                why = (
                    f"{len(unused):,} of its {len(f.exported):,} exported symbols are imported by no object of this "
                    f"launch (-rdynamic exports all). Every lookup of the launch ({scope_lookups:,} before main) "
                    f"searches the program first; its hash table's bloom filter is {fill:.0%} full. Kept: "
                    f"{', '.join(keep[:5])} (headstartd needs main to serve it warm)"
                )
                ok = tools["export_dynamic_symbol"] or len(keep) > 8
                # A program that loads modules itself exports its API to them (an interpreter's C
                # modules, a program's plugins): what one launch loaded says nothing of the others.
                loads = sorted(f.imported & {"dlopen", "dlmopen"})
                if loads:
                    ok = False
                    why += (
                        f". Not advised: the program calls {' and '.join(loads)}, and the modules it loads (none, or "
                        "not all, in this launch) may import any of these; hiding them breaks those modules "
                        "(undefined symbol)"
                    )
                out.append(
                    _item(
                        "export-only-imported",
                        row,
                        flags,
                        ok,
                        why,
                        remove=["-rdynamic", "-Wl,-E", "-Wl,--export-dynamic"],
                        table_bytes=len(unused) * 24 + names,
                        us=None,
                        symbols=keep,
                    )
                )
            else:
                hidden_self = sum(
                    1
                    for b in counted.bindings
                    if b.before_main
                    and _key(b.source) == _key(path)
                    and _key(b.target) == _key(path)
                    and b.symbol in unused
                )
                why = (
                    f"{len(unused):,} of its {len(f.exported):,} exported symbols are imported by no object of this "
                    f"launch: a version script ({{ global: <the {len(f.exported) - len(unused)} imported>; "
                    f"local: *; }}) "
                    f"hides them, and its {hidden_self:,} lookups of them become relative relocations. Holds only "
                    f"if no other program links {row['name']}: headstart sees this launch alone"
                )
                out.append(
                    _item(
                        "hide-unimported",
                        row,
                        [f"-Wl,--version-script=<{len(f.exported) - len(unused)} symbols>"],
                        True,
                        why,
                        lookups=hidden_self,
                        table_bytes=len(unused) * 24 + names,
                        us=hidden_self * lookup_us,
                        at_most=at_most,
                        symbols=sorted(set(f.exported) - set(unused)),
                    )
                )
        # GNU hash.
        if "gnu" not in f.hash_styles and f.hash_styles:
            order = [r["path"] for r in rows]
            mine = order.index(path)
            passing = sum(
                1 for b in counted.bindings if b.before_main and _key(b.target) in {_key(p) for p in order[mine + 1 :]}
            )
            why = (
                f"only a SysV hash table: each of the {passing:,} lookups that pass through it before main walks "
                f"a hash chain, where a GNU hash's bloom filter would reject most at once"
            ) + _whose(row)
            out.append(_item("hash-style-gnu", row, ["-Wl,--hash-style=gnu"], True, why, us=None))
        # DT_NEEDED entries nothing uses.
        for soname in f.needed:
            target = next((g for g in everything if g.soname == soname or Path(g.path).name == soname), None)
            if target is None:
                continue
            used = any(_key(b.source) == _key(path) and _key(b.target) == _key(target.path) for b in counted.bindings)
            if used or set(f.imported) & set(target.exported):
                continue
            still = [g.name for g in needers(soname) if g.path != path]
            trow = by_path.get(target.path)
            if still or trow is None:
                continue
            ctor = (
                (
                    f"; it has {target.constructors} constructor(s), which would no longer run: check nothing relies "
                    f"on them"
                )
                if target.constructors
                else ""
            )
            why = (
                f"{row['name']} needs {soname}, but imports none of its symbols and bound nothing to it in this "
                f"launch; nothing else needs it, so it would not be loaded{ctor}"
            ) + _whose(row)
            us = trow["mapped_us"] + trow["relocate_us"]
            out.append(
                _item(
                    "as-needed",
                    row,
                    ["-Wl,--as-needed"],
                    not target.constructors,
                    why,
                    lookups=trow["lookups_before_main"],
                    relocations=trow["relative"] + trow["symbolic"],
                    dirty_bytes=trow["dirty_kib"] * 1024,
                    us=us,
                    drops=[target.path],
                )
            )
        # Lazy or immediate binding, for this program's pattern.
        if len(f.plt) >= MIN_PLT:
            if f.bind_now:
                why = (
                    f"linked -z now: its {len(f.plt):,} PLT slots are looked up before main. -z lazy would look "
                    f"up only those called, at their first call, but gives up full RELRO (the GOT stays "
                    f"writable): a hardening trade-off, not advised by headstart"
                )
                out.append(
                    _item(
                        "z-lazy",
                        row,
                        ["-Wl,-z,lazy"],
                        False,
                        why,
                        lookups=len(f.plt),
                        us=len(f.plt) * lookup_us,
                        at_most=True,
                    )
                )
            else:
                names = {r.symbol for r in f.plt}
                mine = [b for b in counted.bindings if _key(b.source) == _key(path) and b.symbol in names]
                used = {b.symbol for b in mine}
                before = {b.symbol for b in mine if b.before_main}
                more = len(names - before)
                why = (
                    f"lazy: {len(used):,} of its {len(names):,} PLT symbols were bound by exit or ready, "
                    f"{len(before):,} of them before main. -z now would look up all of them before main: "
                    f"{more:,} more lookups there, about {more * lookup_us:,.0f} µs. Keep lazy for time to main"
                )
                if len(used) == len(names):
                    why += "; every slot is used, so -z now adds no lookups overall, only moves them before main"
                out.append(_item("keep-lazy", row, [], True, why, lookups=0, us=0.0))

    # A library of yours that only the program uses, linked into it.
    merged: set[str] = set()
    for row in rows:
        if row["program"] or not row["yours"]:
            continue
        users = needers(facts[row["path"]].soname or row["name"])
        if [_key(g.path) for g in users] != [_key(program["path"])]:
            continue
        key = _key(row["path"])
        merged.add(key)
        lookups = sum(
            1
            for b in counted.bindings
            if b.before_main and _key(b.target) == key and _key(b.source) in {key, _key(program["path"])}
        )
        why = (
            f"{row['name']} is yours and only the program needs it in this launch: linked into the program "
            f"(its objects or archive instead of -l), it is not searched for and mapped, and the {lookups:,} "
            f"lookups of its symbols by itself and the program are done by the linker. Holds if no other "
            f"program links it"
        )
        out.append(
            _item(
                "link-into-program",
                row,
                [f"<the objects of {row['name']}>"],
                True,
                why,
                lookups=lookups,
                us=row["mapped_us"] + lookups * lookup_us,
                at_most=at_most,
                drops=[row["path"]],
            )
        )
    # The C++ runtime linked in, when only the program needs it.
    cxx = [g for g in everything if g.soname == CXX_RUNTIME]
    if cxx and program["yours"]:
        users = needers(CXX_RUNTIME)
        others = [g for g in users if _key(g.path) != _key(program["path"]) and _key(g.path) not in merged]
        inside = [g.name for g in users if _key(g.path) in merged]
        dropped = [cxx[0]]
        for runtime in (GCC_RUNTIME, "libm.so.6"):
            lib = next((g for g in everything if g.soname == runtime), None)
            linked = {_key(program["path"]), *merged}
            if (
                lib
                and all(_key(g.path) in {_key(cxx[0].path), *linked} for g in needers(runtime))
                and (runtime == GCC_RUNTIME or not any(_key(g.path) in linked for g in needers(runtime)))
            ):
                dropped.append(lib)
        drows = [by_path[g.path] for g in dropped if g.path in by_path]
        lookups = sum(r["lookups_before_main"] for r in drows) + sum(
            1
            for b in counted.bindings
            if b.before_main
            and _key(b.source) == _key(program["path"])
            and _key(b.target) in {_key(g.path) for g in dropped}
        )
        us = (
            sum(r["mapped_us"] + r["relocate_us"] for r in drows)
            + sum(
                1
                for b in counted.bindings
                if b.before_main
                and _key(b.source) == _key(program["path"])
                and _key(b.target) in {_key(g.path) for g in dropped}
            )
            * lookup_us
        )
        if others:
            why = (
                f"not advised: {', '.join(g.name for g in others[:4])} need{'s' if len(others) == 1 else ''} "
                f"{CXX_RUNTIME} too, and a second copy of the C++ runtime in one process breaks exceptions, "
                f"RTTI and the allocator across the boundary"
            )
            out.append(_item("static-libstdc++", program, ["-static-libstdc++", "-static-libgcc"], False, why, us=0.0))
        else:
            once = f" once {', '.join(inside)} is linked into it (link-into-program)," if inside else ""
            why = (
                f"only the program{once} needs {CXX_RUNTIME} among the {len(everything)} objects of this launch "
                f"({len(data['loaded_after_main'])} loaded after main): linked in, "
                f"{', '.join(g.name for g in dropped)} are not loaded, and the program's lookups into them are "
                f"done by the linker. Holds while nothing the program loads later needs {CXX_RUNTIME}"
            )
            out.append(
                _item(
                    "static-libstdc++",
                    program,
                    ["-static-libstdc++", "-static-libgcc"],
                    True,
                    why,
                    lookups=lookups,
                    relocations=sum(r["relative"] + r["symbolic"] for r in drows),
                    dirty_bytes=sum(r["dirty_kib"] for r in drows) * 1024,
                    us=us,
                    at_most=at_most,
                    drops=[g.path for g in dropped],
                )
            )

    return out
