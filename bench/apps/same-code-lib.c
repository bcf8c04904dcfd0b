/* SPDX-License-Identifier: MIT */
/* For tests/test_prepare_display.py: a library that calls a weak function it defines, through its
 * PLT, as libstdc++ calls the C++ inline functions a program may define again (gnome-sudoku's
 * std::ctype<char>::do_widen). A program that defines it too gets the library's calls. */
__attribute__((weak)) int hs_same_code(int x) {
        return 2 * x + 1;
}
/* Its second name, as a C++ constructor's or destructor's variants (C1 and C2) are one function: the
 * library calls it by both. */
extern __attribute__((weak, alias("hs_same_code"))) int hs_same_code_too(int x);

/* A C++ class's type information, as every object that uses the class has a copy of it (weak, and
 * alike): a C name that is its mangled one (typeinfo for hs::same_code). */
__attribute__((weak)) const long _ZTIN2hs9same_codeE[2] = { 1, 2 };

int hs_call_same_code(int x) {
        return 2 * hs_same_code(x) - hs_same_code_too(x) + (int) (_ZTIN2hs9same_codeE[1] - 2);
}
