"""`headstart link check`'s builds: our samples linked again from the objects Meson compiled, once
as Meson links them (before) and once with the advice that holds applied (after), each in a folder of
its own. The link commands are read from Meson's build.ninja, so that `before` is Meson's link."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError

# Advice that relinking applies: those that change only the link of what we build.
APPLIED = (
    "pack-relative-relocs",
    "Bsymbolic",
    "export-only-imported",
    "hide-unimported",
    "static-libstdc++",
    "link-into-program",
    "as-needed",
    "hash-style-gnu",
)


@dataclass(frozen=True)
class SampleBuild:
    target: str  # the program, as build.ninja names it
    args: list[str] = field(default_factory=list)
    ready: str | None = None  # a line of output: ready (and stopped) there; None: at exit
    display: bool = False
    library: str | None = None  # a library of our own it links, as build.ninja names it


SAMPLES: dict[str, SampleBuild] = {
    "many-globals": SampleBuild("bench/many-globals"),
    "catalog": SampleBuild("bench/catalog", library="bench/libhs-catalog.so"),
    "gtk-hello": SampleBuild("bench/gtk-hello", ready="^window shown$", display=True),
    "qt-widgets": SampleBuild("bench/qt-widgets", ready="^qt-widgets:", display=True),
}


@dataclass
class LinkStep:
    command: str  # the rule's command, ninja variables still in it
    inputs: list[str]
    variables: dict[str, str]


def read_ninja(build_dir: Path) -> tuple[dict[str, str], dict[str, LinkStep]]:
    """The rules' commands and the link steps of build.ninja (only what linking needs)."""
    path = build_dir / "build.ninja"
    try:
        text = path.read_text()
    except OSError as e:
        raise HeadstartError(f"{path}: {e.strerror} (build the samples first: make build)") from e
    rules: dict[str, str] = {}
    steps: dict[str, LinkStep] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("rule "):
            name = line.split()[1]
            for follow in lines[i + 1 : i + 6]:
                if follow.strip().startswith("command = "):
                    rules[name] = follow.strip()[len("command = ") :]
                    break
        elif line.startswith("build ") and "_LINKER " in line:
            head, _, rest = line[len("build ") :].partition(": ")
            rule, *ins = rest.split(" | ")[0].split("||")[0].split()
            variables = {}
            for follow in lines[i + 1 :]:
                if not follow.startswith(" "):
                    break
                key, _, value = follow.strip().partition(" = ")
                variables[key] = value
            steps[head] = LinkStep(rule, ins, variables)
    return rules, steps


def _link(
    build_dir: Path, rules: dict[str, str], step: LinkStep, out: Path, inputs: list[str], link_args: list[str]
) -> None:
    command = rules[step.command]
    shell = (
        command.replace("$ARGS", step.variables.get("ARGS", ""))
        .replace("$out", shlex.quote(str(out)))
        .replace("$in", " ".join(shlex.quote(i) for i in inputs))
        .replace("$LINK_ARGS", " ".join(link_args))
        .replace("$$", "$")
    )
    done = subprocess.run(["/bin/sh", "-c", shell], cwd=build_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise HeadstartError(f"linking {out.name} failed: {done.stderr.strip()[-2000:]}\n({shell})")


def _args(step: LinkStep) -> list[str]:
    """LINK_ARGS as separate words, ninja's $$ and the shell's quotes undone where they enclose one word."""
    return [w.replace("$$", "$") for w in re.findall(r"'[^']*'|\S+", step.variables.get("LINK_ARGS", ""))]


def relink(name: str, build_dir: Path, folder: Path, advice: list[dict[str, Any]] | None) -> tuple[Path, list[str]]:
    """Links sample `name` into folder/before (advice None) or folder/after (the advice that holds for
    what we build applied). Returns the program and the changes applied."""
    spec = SAMPLES[name]
    rules, steps = read_ninja(build_dir)
    if spec.target not in steps:
        raise HeadstartError(f"{spec.target} is not in {build_dir}/build.ninja (a sample not built here)")
    out = folder / ("before" if advice is None else "after")
    out.mkdir(parents=True, exist_ok=True)
    chosen = [a for a in advice or [] if a["holds"] and a["yours"] and a["advice"] in APPLIED]
    merged = any(a["advice"] == "link-into-program" for a in chosen)
    applied: list[str] = []
    program_args = _args(steps[spec.target])
    program_inputs = list(steps[spec.target].inputs)
    if spec.library:
        lib_step = steps[spec.library]
        lib_out = out / Path(spec.library).name
        if merged:
            # Its objects into the program; the library is not built.
            program_args = [w for w in program_args if w != spec.library]
            program_inputs += lib_step.inputs
            applied.append("link-into-program")
        else:
            lib_args = _args(lib_step)
            for a in chosen:
                if Path(a["path"]).name != Path(spec.library).name:
                    continue
                lib_args += _flags(a, out, "lib")
                applied.append(f"{a['advice']} (library)")
            _link(build_dir, rules, lib_step, lib_out, lib_step.inputs, lib_args)
            program_args = [str(lib_out) if w == spec.library else w for w in program_args]
    for a in chosen:
        on_library = spec.library and Path(a["path"]).name == Path(spec.library).name
        # Linked in, the library's relocations are the program's: packing them is the program's flag.
        carried = merged and on_library and a["advice"] == "pack-relative-relocs"
        if a["advice"] == "link-into-program" or (on_library and not carried):
            continue
        if carried and "-Wl,-z,pack-relative-relocs" in program_args:
            continue
        program_args = [w for w in program_args if w not in a["remove_flags"]] + _flags(a, out, "program")
        applied.append(a["advice"])
    program = out / Path(spec.target).name
    _link(build_dir, rules, steps[spec.target], program, program_inputs, program_args)
    return program, applied


def _flags(a: dict[str, Any], out: Path, what: str) -> list[str]:
    """The advice's flags, with the symbol lists they name written to files in `out`."""
    symbols = a.get("symbols") or []
    if a["advice"] == "Bsymbolic":
        if not symbols:
            return ["-Wl,-Bsymbolic"]
        listing = out / f"{what}-interposable.list"
        listing.write_text("{\n" + "".join(f"  {s};\n" for s in symbols) + "};\n")
        return [f"-Wl,--dynamic-list={listing}"]
    if a["advice"] == "hide-unimported":
        script = out / f"{what}-exports.map"
        script.write_text("{\n  global:\n" + "".join(f"    {s};\n" for s in symbols) + "  local: *;\n};\n")
        return [f"-Wl,--version-script={script}"]
    if a["advice"] == "export-only-imported":
        if len(symbols) <= 8:
            return [f"-Wl,--export-dynamic-symbol={s}" for s in symbols]
        listing = out / f"{what}-exports.list"
        listing.write_text("{\n" + "".join(f"  {s};\n" for s in symbols) + "};\n")
        return [f"-Wl,--dynamic-list={listing}"]
    return list(a["flags"])
