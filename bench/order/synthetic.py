#!/usr/bin/env python3
"""Writes the seed's synthetic case of startup function ordering (001_286240321a9fb217.txt): a C
program of 10,000 functions of a few hundred bytes each, of which 1,000, spread over the whole
text, run at startup, in an order unrelated to their addresses. It prints one checksum, the same
whatever the order of the functions in the binary.

usage: synthetic.py OUT.c [FUNCTIONS] [CALLED]"""

from __future__ import annotations

import random
import sys

OPS = [
    "x = x * {a}u + {b}u;",
    "x ^= x >> {s};",
    "x += (x << {s}) ^ {a}u;",
    "x = (x ^ {b}u) * {a}u;",
    "x -= x >> {s} | {b}u;",
]


def function(rng: random.Random, i: int) -> str:
    body = []
    for _ in range(40):
        op = rng.choice(OPS)
        body.append(
            "        " + op.format(a=rng.randrange(3, 1 << 31) | 1, b=rng.randrange(1 << 31), s=rng.randrange(1, 31))
        )
    lines = "\n".join(body)
    return f"__attribute__((noinline)) unsigned f{i:05d}(unsigned x)\n{{\n{lines}\n        return x;\n}}\n"


def program(functions: int, called: int) -> str:
    rng = random.Random(20261123)
    parts = ["#include <stdio.h>\n#include <string.h>\n"]
    parts += [function(rng, i) for i in range(functions)]
    startup = list(range(0, functions, functions // called))[:called]
    rng.shuffle(startup)  # run in an order that is not their order in the file
    table = ",\n".join(f"        f{i:05d}" for i in range(functions))
    calls = "\n".join(f"        x = f{i:05d}(x);" for i in startup)
    parts.append(
        f"static unsigned (*const all[])(unsigned) = {{\n{table}\n}};\n\n"
        "int main(int argc, char **argv)\n{\n"
        "        unsigned x = (unsigned) argc;\n"
        f"{calls}\n"
        '        if (argc > 1 && strcmp(argv[1], "all") == 0) /* keeps every function in the binary */\n'
        "                for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)\n"
        "                        x = all[i](x);\n"
        '        printf("%08x\\n", x);\n'
        "        return 0;\n}\n"
    )
    return "\n".join(parts)


def main() -> int:
    out = sys.argv[1]
    functions = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    called = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000
    with open(out, "w") as f:
        f.write(program(functions, called))
    return 0


if __name__ == "__main__":
    sys.exit(main())
