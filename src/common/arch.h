/* SPDX-License-Identifier: MIT */
/* Everything that differs between the architectures we run on. A new port adds one block here. */
#pragma once

#include <elf.h>

#if defined(__x86_64__)
#  define HS_ARCH_NAME "x86-64"
#  define HS_ELF_MACHINE EM_X86_64
#  define HS_R_COPY R_X86_64_COPY
#elif defined(__aarch64__)
#  define HS_ARCH_NAME "aarch64"
#  define HS_ELF_MACHINE EM_AARCH64
#  define HS_R_COPY R_AARCH64_COPY
#else
#  error "headstart has no port for this architecture yet (see src/common/arch.h)"
#endif
