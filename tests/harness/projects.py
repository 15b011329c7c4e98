"""Generate the small C++ projects the real builds run on.

Each project is a git repository with exactly one commit whose author,
committer and dates are fixed, so its commit SHA (and with it every build's
`git.commit.sha`) is the same on every run and every machine.

`shapes` (9 translation units, C++17, libstdc++ only):

    src/util.cpp  src/vec.cpp  src/shape.cpp  src/stats.cpp   the library
    apps/shapetool.cpp  apps/statstool.cpp                    two executables
    tests/util.cpp                                            test helper: the same
                                                              basename as src/util.cpp
    tests/test_shape.cpp  tests/test_stats.cpp                two tests

compiletools finds the library's sources through the headers the mains
include (foo.hpp -> foo.cpp); every file that includes `unit_test.hpp`
(compiletools' default test marker, `testmarkers = unit_test.hpp`) is built
and run as a test. `test_shape` links both util.cpp files.

`shapes-broken` is the same tree with a compile error (an undeclared
identifier) in src/stats.cpp, so a build fails part-way.

Usage: python projects.py ROOT   (writes ROOT/shapes and ROOT/shapes-broken)
"""

import os
import subprocess
import sys

UNIT_TEST_HPP = r'''
#pragma once
// Minimal test helper. compiletools treats every file that mentions this
// header's name as a test (its default testmarkers = unit_test.hpp).
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ut {
inline int& failures() { static int n = 0; return n; }
inline void check(bool ok, const char* expr, int line) {
    if (!ok) { ++failures(); std::fprintf(stderr, "line %d: CHECK failed: %s\n", line, expr); }
}
inline bool near(double a, double b) { return std::fabs(a - b) <= 1e-9; }
inline int finish(const char* name) {
    std::printf("%s: %d failures\n", name, failures());
    return failures() == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
}  // namespace ut

#define CHECK(expr) ::ut::check(static_cast<bool>(expr), #expr, __LINE__)
'''

SHAPES = {
    "src/util.hpp": r'''
#pragma once
#include <string>
#include <vector>

namespace util {
std::string join(const std::vector<std::string>& parts, const std::string& sep);
std::string trim(const std::string& s);
}  // namespace util
''',
    "src/util.cpp": r'''
#include "util.hpp"

namespace util {
std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += sep;
        out += parts[i];
    }
    return out;
}
std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\n");
    return s.substr(b, e - b + 1);
}
}  // namespace util
''',
    "src/vec.hpp": r'''
#pragma once

namespace shapes {
struct Vec { double x = 0.0, y = 0.0; };
Vec operator+(Vec a, Vec b);
Vec operator-(Vec a, Vec b);
double dot(Vec a, Vec b);
double cross(Vec a, Vec b);
double length(Vec a);
}  // namespace shapes
''',
    "src/vec.cpp": r'''
#include "vec.hpp"
#include <cmath>

namespace shapes {
Vec operator+(Vec a, Vec b) { return {a.x + b.x, a.y + b.y}; }
Vec operator-(Vec a, Vec b) { return {a.x - b.x, a.y - b.y}; }
double dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y; }
double cross(Vec a, Vec b) { return a.x * b.y - a.y * b.x; }
double length(Vec a) { return std::sqrt(dot(a, a)); }
}  // namespace shapes
''',
    "src/shape.hpp": r'''
#pragma once
#include "vec.hpp"
#include <vector>

namespace shapes {
struct Polygon { std::vector<Vec> pts; };
double area(const Polygon& p);
double perimeter(const Polygon& p);
Vec centroid(const Polygon& p);
}  // namespace shapes
''',
    "src/shape.cpp": r'''
#include "shape.hpp"
#include <cmath>

namespace shapes {
double area(const Polygon& p) {
    double s = 0.0;
    const std::size_t n = p.pts.size();
    for (std::size_t i = 0; i < n; ++i) s += cross(p.pts[i], p.pts[(i + 1) % n]);
    return std::fabs(s) * 0.5;
}
double perimeter(const Polygon& p) {
    double s = 0.0;
    const std::size_t n = p.pts.size();
    for (std::size_t i = 0; i < n; ++i) s += length(p.pts[(i + 1) % n] - p.pts[i]);
    return s;
}
Vec centroid(const Polygon& p) {
    Vec c;
    for (const auto& v : p.pts) c = c + v;
    const double n = p.pts.empty() ? 1.0 : static_cast<double>(p.pts.size());
    return {c.x / n, c.y / n};
}
}  // namespace shapes
''',
    "src/stats.hpp": r'''
#pragma once
#include <vector>

namespace stats {
double mean(const std::vector<double>& v);
double median(std::vector<double> v);
}  // namespace stats
''',
    "src/stats.cpp": r'''
#include "stats.hpp"
#include <algorithm>
#include <numeric>

namespace stats {
double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}
}  // namespace stats
''',
    "apps/shapetool.cpp": r'''
// shapetool: area and perimeter of the unit square and a triangle.
#include "../src/shape.hpp"
#include "../src/util.hpp"
#include <cstdio>

int main() {
    const shapes::Polygon sq{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}};
    const shapes::Polygon tri{{{0, 0}, {4, 0}, {0, 3}}};
    std::printf("%s\n", util::join({"square", "triangle"}, ",").c_str());
    std::printf("%g %g %g %g\n", shapes::area(sq), shapes::perimeter(sq), shapes::area(tri), shapes::perimeter(tri));
    return 0;
}
''',
    "apps/statstool.cpp": r'''
// statstool: mean and median of its numeric arguments.
#include "../src/stats.hpp"
#include "../src/util.hpp"
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    std::vector<double> v;
    for (int i = 1; i < argc; ++i) v.push_back(std::atof(util::trim(argv[i]).c_str()));
    std::printf("mean=%g median=%g\n", stats::mean(v), stats::median(v));
    return 0;
}
''',
    "tests/unit_test.hpp": UNIT_TEST_HPP,
    "tests/util.hpp": r'''
#pragma once
// Test-only helpers; deliberately the same basename as src/util.hpp.
#include "../src/shape.hpp"

namespace testutil {
shapes::Polygon unit_square();
shapes::Polygon triangle(double w, double h);
}  // namespace testutil
''',
    "tests/util.cpp": r'''
#include "util.hpp"

namespace testutil {
shapes::Polygon unit_square() { return shapes::Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}; }
shapes::Polygon triangle(double w, double h) { return shapes::Polygon{{{0, 0}, {w, 0}, {0, h}}}; }
}  // namespace testutil
''',
    "tests/test_shape.cpp": r'''
#include "unit_test.hpp"
#include "util.hpp"
#include "../src/util.hpp"
#include "../src/shape.hpp"

int main() {
    CHECK(ut::near(shapes::area(testutil::unit_square()), 1.0));
    CHECK(ut::near(shapes::perimeter(testutil::unit_square()), 4.0));
    CHECK(ut::near(shapes::area(testutil::triangle(4, 3)), 6.0));
    const auto c = shapes::centroid(testutil::unit_square());
    CHECK(ut::near(c.x, 0.5) && ut::near(c.y, 0.5));
    CHECK(util::join({"a", "b"}, "+") == "a+b");
    return ut::finish("test_shape");
}
''',
    "tests/test_stats.cpp": r'''
#include "unit_test.hpp"
#include "../src/stats.hpp"
#include "../src/util.hpp"

int main() {
    CHECK(ut::near(stats::mean({1, 2, 3, 4}), 2.5));
    CHECK(ut::near(stats::median({5, 1, 3}), 3.0));
    CHECK(util::trim("  x ") == "x");
    return ut::finish("test_stats");
}
''',
}

# Everything a build writes stays out of the commit (and `git status` clean).
GITIGNORE = "bin/\ncas-*/\ndiag-*/\ncompile_commands*.json\n.ct-*\n.ninja_*\nbuild.ninja\nMakefile\nCMakeLists.txt\n"

# Fixed identity and dates: the commit SHA is a pure function of the tree.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "realbuilds", "GIT_AUTHOR_EMAIL": "realbuilds@example.invalid",
    "GIT_COMMITTER_NAME": "realbuilds", "GIT_COMMITTER_EMAIL": "realbuilds@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


def broken_tree():
    files = dict(SHAPES)
    # A realistic slip: a helper renamed in the header but not at one call site.
    files["src/stats.cpp"] = files["src/stats.cpp"].replace(
        "std::accumulate(v.begin()", "accumulate_all(v.begin()")
    assert files["src/stats.cpp"] != SHAPES["src/stats.cpp"]
    return files


PROJECTS = {
    "shapes": (SHAPES, "shapes: a small geometry library, two tools, two tests"),
    "shapes-broken": (broken_tree(), "shapes: call a helper that does not exist"),
}


def _git(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_GIT_ENV)
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_project(root, name):
    """Write ROOT/NAME as a one-commit git repo; returns (path, commit sha)."""
    files, message = PROJECTS[name]
    path = os.path.join(root, name)
    os.makedirs(path)
    for rel, text in dict(files, **{".gitignore": GITIGNORE}).items():
        full = os.path.join(path, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text.lstrip("\n"))
    _git(["init", "-q", "-b", "main", "."], path)
    _git(["add", "-A"], path)
    _git(["-c", "commit.gpgsign=false", "commit", "-q", "-m", message], path)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True, timeout=30,
                         capture_output=True, text=True).stdout.strip()
    return path, sha


def clone(src, dst):
    """A workspace: `git clone` of a project (same commit, packed refs, as users have)."""
    subprocess.run(["git", "clone", "-q", src, dst], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return dst


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    for name in PROJECTS:
        path, sha = make_project(root, name)
        print(f"{path}: {sha}")


if __name__ == "__main__":
    main()
