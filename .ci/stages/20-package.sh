# Packaging proof: consumers build against tokchron by find_package after cmake --install to a
# temporary prefix (configured with the README's pure-install options), by add_subdirectory, by
# FetchContent with a local SOURCE_DIR, and by pkg-config; each runs a program that records a
# request and prints its TTFT. The find_package consumer also links tokchron::record (the
# separate-instantiation library, compiled in the consumer's build from the installed source).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=$TOKCHRON_ROOT/tests/package
tc_tree install "$work/lib" >/dev/null
cmake --install "$work/lib" --prefix "$work/prefix" >/dev/null
for kind in find_package add_subdirectory fetchcontent; do
  echo "--- consumer via $kind"
  cmake -S "$pkg/$kind" -B "$work/$kind" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DTOKCHRON_SOURCE="$TOKCHRON_ROOT" >"$work/$kind.log" 2>&1 || { cat "$work/$kind.log"; exit 1; }
  cmake --build "$work/$kind" >/dev/null
  "$work/$kind/consumer"
done
echo "--- tokchron::record via find_package"
"$work/find_package/record_consumer"
# Warnings as errors are tokchron's own business: ON at top level, OFF inside a consumer's build.
grep -q '^TOKCHRON_WERROR:BOOL=ON$' "$work/lib/CMakeCache.txt"
for kind in add_subdirectory fetchcontent; do
  grep -q '^TOKCHRON_WERROR:BOOL=OFF$' "$work/$kind/CMakeCache.txt" ||
    { echo "TOKCHRON_WERROR is not OFF in the $kind consumer"; exit 1; }
done
echo "TOKCHRON_WERROR: ON at top level, OFF as a subproject"
echo "--- consumer via pkg-config"
PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" pkg-config --modversion tokchron
# shellcheck disable=SC2046
c++ -std=c++17 $(PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" pkg-config --cflags tokchron) \
  "$pkg/consumer/main.cpp" -o "$work/pc_consumer"
"$work/pc_consumer"
