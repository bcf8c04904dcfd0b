// SPDX-License-Identifier: MIT
// A Qt program that links libqt-resource-library: the library's resources are its own.
#include <cstdio>

extern "C" int qt_resource_library_linked(void);

int main() {
        std::printf("linked: %d\n", qt_resource_library_linked());
        return 0;
}
