/* SPDX-License-Identifier: MIT */
/* Prints a product too small for a normal double, computed by its -ffast-math library: 1e-310, or 0
 * once that library's loading set flush-to-zero. */
#include <stdio.h>

double hs_fast_math_scale(double x, double by);

int main(void) {
        printf("%g\n", hs_fast_math_scale(1e-300, 1e-10));
        return 0;
}
