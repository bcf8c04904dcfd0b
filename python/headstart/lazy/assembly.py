"""The stubs of `headstart lazy build`, in each machine's assembly.

Function i's stub jumps through slot i. Each slot starts at thunk i, which puts i in a scratch
register and goes to the common part: that saves every register a call may carry arguments in,
calls TAG_resolve(i) (resolver.c), restores them and jumps to the address it returned, so the
real function gets the call exactly as it was made and returns straight to the caller."""

from __future__ import annotations

_X86_64_SAVE = ["%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9", "%rax"]  # %al: the vector count of varargs


def _x86_64(tag: str, names: list[str]) -> list[str]:
    out = ["        .text"]
    for i, name in enumerate(names):
        out.append(f"""\
        .globl {name}
        .type {name}, @function
        .p2align 4
{name}:
        endbr64
        jmp *{tag}_slots+{8 * i}(%rip)
        .size {name}, .-{name}
        .globl {tag}_thunk_{i}
        .hidden {tag}_thunk_{i}
{tag}_thunk_{i}:
        endbr64
        mov ${i}, %r11
        jmp {tag}_common""")
    out += [f"        .p2align 4\n{tag}_common:", "        endbr64"]
    out += [f"        push {r}" for r in _X86_64_SAVE]
    out.append("        sub $128, %rsp")  # with the 7 pushes and the return address, %rsp is 16-aligned
    out += [f"        movdqu %xmm{i}, {16 * i}(%rsp)" for i in range(8)]
    out += ["        mov %r11, %rdi", f"        call {tag}_resolve", "        mov %rax, %r11"]
    out += [f"        movdqu {16 * i}(%rsp), %xmm{i}" for i in range(8)]
    out.append("        add $128, %rsp")
    out += [f"        pop {r}" for r in reversed(_X86_64_SAVE)]
    out.append("        jmp *%r11")
    out.append('        .section .note.GNU-stack,"",@progbits')
    return out


# The frame: x29 and x30, x0-x7 and x8 (where a large result goes), then q0-q7; 16-byte aligned.
_AARCH64_FRAME = 224


def _aarch64(tag: str, names: list[str]) -> list[str]:
    out = ["        .text"]
    for i, name in enumerate(names):
        out.append(f"""\
        .globl {name}
        .type {name}, %function
        .p2align 4
{name}:
        hint 34
        adrp x16, {tag}_slots+{8 * i}
        ldr x16, [x16, :lo12:{tag}_slots+{8 * i}]
        br x16
        .size {name}, .-{name}
        .globl {tag}_thunk_{i}
        .hidden {tag}_thunk_{i}
{tag}_thunk_{i}:
        hint 34
        mov x17, #{i}
        b {tag}_common""")
    # hint 34 is `bti c`: a landing pad where branch protection is on, a no-op elsewhere.
    out += [f"        .p2align 4\n{tag}_common:", "        hint 34"]
    out += [f"        stp x29, x30, [sp, #-{_AARCH64_FRAME}]!", "        mov x29, sp"]
    saves = [f"x{i}, x{i + 1}, [sp, #{16 + 8 * i}]" for i in range(0, 8, 2)]
    saves += [f"q{i}, q{i + 1}, [sp, #{96 + 16 * i}]" for i in range(0, 8, 2)]
    out += [f"        stp {s}" for s in saves]
    out += ["        str x8, [sp, #80]", "        mov x0, x17", f"        bl {tag}_resolve", "        mov x16, x0"]
    out += [f"        ldp {s}" for s in saves]
    out += ["        ldr x8, [sp, #80]", f"        ldp x29, x30, [sp], #{_AARCH64_FRAME}", "        br x16"]
    out.append('        .section .note.GNU-stack,"",%progbits')
    return out


WRITERS = {"x86_64": _x86_64, "aarch64": _aarch64}


def stubs(arch: str, tag: str, names: list[str]) -> str:
    """The assembly of the stubs of names, in the order of their slots."""
    return "\n".join(WRITERS[arch](tag, names)) + "\n"
