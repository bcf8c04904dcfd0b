/* SPDX-License-Identifier: MIT */
/* Everything that differs between the architectures we run on. A new port adds one block here:
 * its ELF machine and relocation types, the symbol versions under which its C library exports
 * __libc_start_main and dlclose, and how to enter a program's _start on a given stack. */
#pragma once

#include <elf.h>

#if defined(__x86_64__)
#  define HS_ARCH_NAME "x86-64"
#  define HS_ELF_MACHINE EM_X86_64
#  define HS_R_COPY R_X86_64_COPY
#  define HS_R_RELATIVE R_X86_64_RELATIVE
#  define HS_R_GLOB_DAT R_X86_64_GLOB_DAT
#  define HS_R_ABS R_X86_64_64
#  define HS_R_JUMP_SLOT R_X86_64_JUMP_SLOT
/* The dynamic relocations that refer to a module's thread-local block (module id, offset in it,
 * offset from the thread pointer, descriptor). */
#  define HS_R_IS_TLS(t)                                                                          \
          ((t) == R_X86_64_DTPMOD64 || (t) == R_X86_64_DTPOFF64 || (t) == R_X86_64_TPOFF64 ||     \
           (t) == R_X86_64_DTPOFF32 || (t) == R_X86_64_TPOFF32 || (t) == R_X86_64_TLSDESC)
/* Those of initial-exec code: an offset from the thread pointer, so the block must be static TLS. */
#  define HS_R_IS_TLS_STATIC(t) ((t) == R_X86_64_TPOFF64 || (t) == R_X86_64_TPOFF32)
/* The version the architecture's first glibc gave __libc_start_main and dlclose (glibc 2.34 gave each
 * a second one: a new start-up, and dlclose moved into the C library). */
#  define HS_GLIBC_FIRST_VERSION "GLIBC_2.2.5"
/* glibc's own floor for a thread's stack (its internal PTHREAD_STACK_MIN, pthreaddef.h). */
#  define HS_THREAD_STACK_MIN 16384
/* _start finds argc at the stack pointer and the loader's exit function in %rdx (none: 0). */
#  define HS_JUMP_TO_ENTRY(entry, sp)                                                             \
          __asm__ volatile("mov %0, %%rsp\n\t"                                                     \
                           "xor %%edx, %%edx\n\t"                                                  \
                           "xor %%ebp, %%ebp\n\t"                                                  \
                           "jmp *%1" ::"r"(sp), "r"(entry) : "rdx", "memory")
#elif defined(__aarch64__)
#  define HS_ARCH_NAME "aarch64"
#  define HS_ELF_MACHINE EM_AARCH64
#  define HS_R_COPY R_AARCH64_COPY
#  define HS_R_RELATIVE R_AARCH64_RELATIVE
#  define HS_R_GLOB_DAT R_AARCH64_GLOB_DAT
#  define HS_R_ABS R_AARCH64_ABS64
#  define HS_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#  define HS_R_IS_TLS(t)                                                                          \
          ((t) == R_AARCH64_TLS_DTPMOD || (t) == R_AARCH64_TLS_DTPREL || (t) == R_AARCH64_TLS_TPREL || \
           (t) == R_AARCH64_TLSDESC)
#  define HS_R_IS_TLS_STATIC(t) ((t) == R_AARCH64_TLS_TPREL)
#  define HS_GLIBC_FIRST_VERSION "GLIBC_2.17"
#  define HS_THREAD_STACK_MIN 131072
/* _start finds argc at sp and the loader's exit function in x0 (none: 0). */
#  define HS_JUMP_TO_ENTRY(entry, sp)                                                             \
          __asm__ volatile("mov x16, %1\n\t"                                                       \
                           "mov sp, %0\n\t"                                                        \
                           "mov x0, #0\n\t"                                                        \
                           "mov x29, #0\n\t"                                                       \
                           "mov x30, #0\n\t"                                                       \
                           "br x16" ::"r"(sp), "r"(entry) : "x0", "x16", "x30", "memory")
#else
#  error "headstart has no port for this architecture yet (see src/common/arch.h)"
#endif
