/* SPDX-License-Identifier: MIT */
/* The floating-point control state a thread computes under: the rounding mode, flush-to-zero and
 * denormals-are-zero, and which exceptions trap. exec starts every program with the architecture's
 * default; a forked child keeps its parent's. A library whose constructor changes it (one linked
 * with -ffast-math or -Ofast by GCC before 13 carries crtfastmath.o, which sets flush-to-zero and
 * denormals-are-zero as it loads) would change it in the daemon, and so for every program the
 * daemon serves, where under exec only the programs that load that library compute so. The sticky
 * exception flags are left out: any arithmetic sets them, and a program clears them before it
 * tests them. */
#pragma once

#include <stdint.h>

static inline uint64_t hs_fp_control(void) {
#if defined(__x86_64__)
        uint32_t mxcsr;
        uint16_t x87;
        __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
        __asm__ volatile("fnstcw %0" : "=m"(x87));
        return (uint64_t) x87 << 32 | (mxcsr & ~UINT32_C(0x3f)); /* 0x3f: SSE's sticky flags */
#elif defined(__aarch64__)
        uint64_t fpcr; /* control only: the flags are FPSR's */
        __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
        return fpcr;
#else
#  error "hs_fp_control has no port for this architecture yet"
#endif
}
