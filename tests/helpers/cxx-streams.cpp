// SPDX-License-Identifier: MIT
// Built like a distribution's C++ program (-fPIE, no -rdynamic): it reaches libstdc++'s standard
// streams through copy relocations, so its std::cout is its own copy, which libstdc++'s
// ios_base::Init built in place under exec. Prints what shows whether the streams were built
// there: their ties, their own storage (iword) inside them, and the order that the tie of cerr to
// cout gives to output once cout is buffered (sync_with_stdio(false)), stdout and stderr one pipe.
#include <cstdint>
#include <iostream>
#include <string>

static bool inside(const void *p, const void *object, std::size_t size) {
        auto a = reinterpret_cast<std::uintptr_t>(p), o = reinterpret_cast<std::uintptr_t>(object);
        return a >= o && a < o + size;
}

int main(int argc, char **argv) {
        std::cout << "cin tied to cout: " << (std::cin.tie() == &std::cout) << "\n";
        std::cout << "cerr tied to cout: " << (std::cerr.tie() == &std::cout) << "\n";
        std::cout << "wcin tied to wcout: " << (std::wcin.tie() == &std::wcout) << "\n";
        std::cout << "wcerr tied to wcout: " << (std::wcerr.tie() == &std::wcout) << "\n";
        std::cout << "clog tied: " << (std::clog.tie() != nullptr) << "\n";
        std::cout << "cout's words inside it: " << inside(&std::cout.iword(1), &std::cout, sizeof std::cout) << "\n";
        std::cout << "cin's words inside it: " << inside(&std::cin.iword(1), &std::cin, sizeof std::cin) << "\n";
        std::cout.iword(2) = 42;
        std::cout << "iword kept: " << std::cout.iword(2) << std::endl;
        if (argc > 1 && std::string(argv[1]) == "--unsync") {
                std::ios::sync_with_stdio(false);
                std::cout << "buffered in cout, flushed by the tie; ";
                std::cerr << "then cerr" << std::endl;
                std::cout << "cout again" << std::endl;
        }
        std::string line;
        std::size_t n = 0;
        while (std::getline(std::cin, line))
                n += line.size();
        std::cout << "read " << n << " bytes from cin" << std::endl;
        return 5;
}
