# Lint (fast, under a minute): clang-format finds nothing to change in any tracked C/C++/CUDA
# file (the repository's .clang-format), and clang-tidy (.clang-tidy, every finding an error)
# passes on the library headers: one translation unit includes every header under
# include/tokchron/, and only findings in those headers are reported (HeaderFilterRegex).
# .ci/check_includes.py: no library header includes a standard header whose names it never
# uses (a text check against a table of each header's names; its docstring says what it is not).
# .ci/check_layers.py: includes inside include/tokchron/ flow one way, lowest layer first (the
# order is written once, in that script).
# No `detail::` name in tools/ or examples/: they use the public API only (and a tool's own
# helpers are part of its own interface, not a detail namespace).
# .ci/check_public_api.py: no public declaration of the library (outside `detail`) names a
# `detail::` type in what a user meets (returns, parameters, fields, aliases, public bases):
# libclang over the same translation units clang-tidy reads (about 30 s).
# Commit subjects: every commit after the rule came (SUBJECTS_SINCE; .githooks/commit-msg)
# has a subject of at most 72 characters, the detail in the body (a shallow clone without that
# commit checks HEAD's subject alone).
tc_need_pkgs git clang-format clang-tidy libboost-dev nlohmann-json3-dev prometheus-cpp-dev catch2 \
  python3 python3-clang-14 libclang1-14
cd "$TOKCHRON_ROOT"

echo "--- unused standard includes in include/tokchron/"
python3 .ci/check_includes.py .
echo "--- layer order of include/tokchron/"
python3 .ci/check_layers.py .

echo "--- commit subjects of at most 72 characters"
SUBJECTS_SINCE=05a9bdc2d0537552cf855a766100d55f399e9640  # the commit before the rule (.githooks/commit-msg)
if git cat-file -e "$SUBJECTS_SINCE^{commit}" 2>/dev/null; then range=$SUBJECTS_SINCE..HEAD; else range=-1; fi
long=$(git log --format='%h %s' "$range" |
  python3 -c 'import sys; [print(l, end="") for l in sys.stdin if len(l.rstrip("\n").split(" ", 1)[-1]) > 72]')
[ -z "$long" ] || { printf 'subjects over 72 characters (say the why in the body):\n%s\n' "$long"; exit 1; }
echo "commit subjects: $(git rev-list --count "$range" 2>/dev/null || echo 1) checked"

echo "--- clang-format --dry-run -Werror"
git ls-files -z '*.hpp' '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format --dry-run -Werror
echo "clang-format: $(git ls-files '*.hpp' '*.cpp' '*.h' '*.cu' '*.cuh' | wc -l) files clean"

# The tools and examples use the library's public API only: no `detail::` name outside
# include/tokchron/ and tests/.
echo "--- detail:: names in tools/ and examples/"
if git grep -n "detail::" -- tools examples; then
  echo "detail:: names above: use the public API (or give a tool's helper a name of its own)"
  exit 1
fi
echo "detail:: names: none"

echo "--- clang-tidy on the library headers"
tidy=$TOKCHRON_CI_BUILD/clang-tidy
mkdir -p "$tidy"
# The Catch2 adaptor gets a translation unit of its own: Catch2 and doctest both define CHECK.
catch2_adaptor=include/tokchron/testing/catch2.hpp
{
  git ls-files 'include/tokchron/*.hpp' | grep -vx "$catch2_adaptor" |
    sed 's|^include/\(.*\)$|#include "\1"|'
  echo 'int main() {}'
} >"$tidy/all_headers.cpp"
printf '#include "tokchron/testing/catch2.hpp"\nint main() {}\n' >"$tidy/catch2_adaptor.cpp"
# (clang-tidy's count of the findings it suppressed outside those headers is dropped.)
for tu in all_headers catch2_adaptor; do
  clang-tidy --quiet --config-file=.clang-tidy "$tidy/$tu.cpp" -- -std=c++17 \
    -I"$TOKCHRON_ROOT/include" 2>&1 | { grep -v '^[0-9]* warnings\? generated\.$' || true; }
done
echo "clang-tidy: $(( $(grep -c '^#include' "$tidy/all_headers.cpp") + 1 )) headers clean"

# Debian's python3 (the bindings are its package), not another python3 first on the PATH.
echo "--- public declarations name no detail:: type"
/usr/bin/python3 .ci/check_public_api.py "$TOKCHRON_ROOT" "$tidy/all_headers.cpp" \
  "$tidy/catch2_adaptor.cpp" -- -std=c++17 -I"$TOKCHRON_ROOT/include"
