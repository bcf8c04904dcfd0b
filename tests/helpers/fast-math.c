/* SPDX-License-Identifier: MIT */
/* Built with -ffast-math (meson.build): its loading may set flush-to-zero. */
double hs_fast_math_scale(double x, double by);

double hs_fast_math_scale(double x, double by) {
        return x * by;
}
