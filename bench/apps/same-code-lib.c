/* SPDX-License-Identifier: MIT */
/* For tests/test_prepare_display.py: a library that calls a weak function it defines, through its
 * PLT, as libstdc++ calls the C++ inline functions a program may define again (gnome-sudoku's
 * std::ctype<char>::do_widen). A program that defines it too gets the library's calls. */
__attribute__((weak)) int hs_same_code(int x) {
        return 2 * x + 1;
}

int hs_call_same_code(int x) {
        return hs_same_code(x);
}
