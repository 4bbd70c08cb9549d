# Shared helpers for tokchron's scripts (sourced, not run).
# need_pkgs PKG...: installs the Debian packages that are missing (as root, or through sudo).
need_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tokchron: installing missing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
}

# The packages every build needs.
TOKCHRON_BASE_PKGS=(build-essential g++ clang cmake ninja-build pkg-config
                    libboost-dev doctest-dev libbenchmark-dev nlohmann-json3-dev
                    libopenblas-dev)

tc_jobs() { nproc 2>/dev/null || echo 2; }

# configure_build DIR [cmake args...]: configures (Ninja) and builds DIR.
configure_build() {
  local dir=$1; shift
  cmake -S "$TOKCHRON_ROOT" -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$(tc_jobs)"
}
