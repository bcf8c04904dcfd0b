/* SPDX-License-Identifier: MIT */
/* A C++ program with many global symbols: a thousand polymorphic classes, each with a global
 * instance and a global string that register themselves before main. Each class brings a vtable
 * and type information (relocations against libstdc++), each global a constructor; this is the
 * kind of program the seed paper found costliest to launch. Argument: how many shapes to sum. */
#include <cstdio>
#include <cstdlib>
#include <string>
#include <typeinfo>
#include <vector>

#include "mark.h"

namespace {

struct Shape;

std::vector<Shape *> &registry() {
        static std::vector<Shape *> shapes;
        return shapes;
}

struct Shape {
        Shape() { registry().push_back(this); }
        virtual ~Shape() = default;
        virtual double area() const = 0;
        virtual const char *kind() const = 0;
};

}  // namespace

template <int N>
struct Polygon : Shape {
        double area() const override { return N * 0.5; }
        const char *kind() const override { return typeid(*this).name(); }
};

// A thousand global instances and labels, named shape_000 to shape_999 (1000 + N keeps the template
// argument decimal).
#define HS_SHAPE(n) Polygon<1##n> shape_##n; std::string label_##n = "shape " #n;
#define HS_TEN(p) HS_SHAPE(p##0) HS_SHAPE(p##1) HS_SHAPE(p##2) HS_SHAPE(p##3) HS_SHAPE(p##4) \
        HS_SHAPE(p##5) HS_SHAPE(p##6) HS_SHAPE(p##7) HS_SHAPE(p##8) HS_SHAPE(p##9)
#define HS_HUNDRED(p) HS_TEN(p##0) HS_TEN(p##1) HS_TEN(p##2) HS_TEN(p##3) HS_TEN(p##4) \
        HS_TEN(p##5) HS_TEN(p##6) HS_TEN(p##7) HS_TEN(p##8) HS_TEN(p##9)
HS_HUNDRED(0) HS_HUNDRED(1) HS_HUNDRED(2) HS_HUNDRED(3) HS_HUNDRED(4)
HS_HUNDRED(5) HS_HUNDRED(6) HS_HUNDRED(7) HS_HUNDRED(8) HS_HUNDRED(9)

int main(int argc, char *argv[]) {
        headstart_mark_main();
        size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : registry().size();
        if (count > registry().size())
                count = registry().size();
        double total = 0;
        for (size_t i = 0; i < count; i++)
                total += registry()[i]->area();
        std::printf("many-globals: %zu shapes registered, %zu summed, area %.1f, last %s (%s)\n",
                    registry().size(), count, total, registry().back()->kind(), label_999.c_str());
        return 0;
}
