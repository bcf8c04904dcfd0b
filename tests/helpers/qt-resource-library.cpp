// SPDX-License-Identifier: MIT
// A library with Qt resources compiled in (rcc): its constructor registers them with the Qt it
// links, as every library built with a .qrc does.
extern "C" int qt_resource_library_linked(void) {
        return 1;
}
