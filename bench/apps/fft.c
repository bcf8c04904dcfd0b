/* SPDX-License-Identifier: MIT */
/* A discrete Fourier transform with FFTW of a signal made of known tones; prints the strongest bins.
 * Usage: fft [N]   (N points, default 4096) */
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mark.h"

int main(int argc, char *argv[]) {
        headstart_mark_main();
        int n = argc > 1 ? atoi(argv[1]) : 4096;
        if (n < 16 || n > (1 << 22)) {
                fprintf(stderr, "fft: N must be between 16 and 4194304\n");
                return 2;
        }
        double *in = fftw_malloc(sizeof(double) * (size_t) n);
        fftw_complex *out = fftw_malloc(sizeof(fftw_complex) * (size_t) (n / 2 + 1));
        /* FFTW_ESTIMATE: the plan, and so the output, does not depend on timing measurements. */
        fftw_plan plan = fftw_plan_dft_r2c_1d(n, in, out, FFTW_ESTIMATE);
        for (int i = 0; i < n; i++)
                in[i] = sin(2 * M_PI * 50 * i / n) + 0.5 * sin(2 * M_PI * 120 * i / n) + 0.25 * cos(2 * M_PI * 7 * i / n);
        fftw_execute(plan);

        printf("fft of %d points; bins with magnitude above 0.01:\n", n);
        for (int k = 0; k <= n / 2; k++) {
                double m = hypot(out[k][0], out[k][1]) / (n / 2);
                if (m > 0.01)
                        printf("  bin %5d: %.4f\n", k, m);
        }
        fftw_destroy_plan(plan);
        fftw_free(in);
        fftw_free(out);
        return 0;
}
