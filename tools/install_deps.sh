#!/usr/bin/env bash
# Installs what CUDA Workbook needs besides the CUDA Toolkit, on Debian 12/13 and Ubuntu
# 22.04/24.04, from the package mirror apt is already configured with (it names no host).
# .ci/run calls this same script, so CI proves it on every change.
#
#   sudo tools/install_deps.sh          install
#   tools/install_deps.sh --dry-run     print what it would run, change nothing
#
# Installed: CMake >= 3.25, Ninja, a C++ compiler, Python 3 with matplotlib, Doxygen and
# Graphviz (the docs), and Catch2 3 where the distribution has it. Where it does not
# (Ubuntu 22.04), the build downloads the pinned Catch2 release once. Ubuntu 22.04's CMake
# (3.22) is too old; a newer one comes from pip. The CUDA Toolkit (12 or newer) is not a
# distribution package of the right version: the script only checks for it.
set -euo pipefail

dry_run=0
case "${1:-}" in
  "") ;;
  --dry-run|-n) dry_run=1 ;;
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install_deps.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

run() {
  echo "+ $*"
  [ "$dry_run" -eq 1 ] || "$@"
}

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if [ "$dry_run" -eq 0 ] && ! command -v sudo >/dev/null; then
    echo "install_deps.sh needs root to install packages: run it as root or install sudo." >&2
    echo "No root at all (a course server)? README.md, 'Set-up', says what to ask for." >&2
    exit 1
  fi
  sudo=(sudo)
fi

[ -r /etc/os-release ] || { echo "install_deps.sh: no /etc/os-release; this script knows Debian and Ubuntu only." >&2; exit 1; }
. /etc/os-release
distro="${ID:-unknown} ${VERSION_ID:-?}"

# The mirror apt uses for this distribution's suites, from its own configuration.
# shellcheck source=tools/apt_mirror.sh
. "$(dirname "$0")/apt_mirror.sh"

common=(ninja-build g++ python3 python3-matplotlib doxygen graphviz)
catch2=()
cmake_from_pip=0
add_backports=0
case "${ID:-}:${VERSION_CODENAME:-}" in
  debian:bookworm) add_backports=1; catch2=(-t bookworm-backports libcatch2-dev); common+=(cmake) ;;
  debian:trixie|ubuntu:noble) catch2=(catch2); common+=(cmake) ;;
  ubuntu:jammy) cmake_from_pip=1; common+=(python3-pip) ;;  # its Catch2 is 2.13: the build fetches 3
  *)
    echo "install_deps.sh knows Debian 12/13 and Ubuntu 22.04/24.04; this is ${PRETTY_NAME:-$distro}." >&2
    echo "Install by hand: CMake >= 3.25, Ninja, a C++17 compiler, Python 3 with matplotlib, Doxygen," >&2
    echo "Graphviz, and Catch2 3 if packaged (otherwise the build fetches it once)." >&2
    exit 1 ;;
esac

export DEBIAN_FRONTEND=noninteractive
if [ "$add_backports" -eq 1 ] && ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  mirror=$(apt_mirror "$VERSION_CODENAME")
  if [ -z "$mirror" ]; then
    echo "install_deps.sh: found no 'bookworm' entry in apt's sources to take the mirror from." >&2
    echo "Add bookworm-backports to apt's sources yourself, then run this again." >&2
    exit 1
  fi
  echo "Catch2 3 is in bookworm-backports: adding that suite from apt's mirror ${mirror}"
  if [ "$dry_run" -eq 1 ]; then
    echo "+ echo 'deb ${mirror} bookworm-backports main' > /etc/apt/sources.list.d/workbook-backports.list"
  else
    echo "deb ${mirror} bookworm-backports main" | "${sudo[@]}" tee /etc/apt/sources.list.d/workbook-backports.list >/dev/null
  fi
fi

run "${sudo[@]}" apt-get update -qq
run "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${common[@]}"
[ "${#catch2[@]}" -eq 0 ] || run "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${catch2[@]}"
if [ "$cmake_from_pip" -eq 1 ]; then
  # Ubuntu 22.04's cmake is 3.22; pip's wheel is current. For the invoking user, not root.
  target_user="${SUDO_USER:-$(id -un)}"
  if [ "$target_user" != "$(id -un)" ]; then
    run sudo -u "$target_user" python3 -m pip install --user --upgrade 'cmake>=3.25'
  else
    run python3 -m pip install --user --upgrade 'cmake>=3.25'
  fi
  echo "CMake from pip is in ~/.local/bin: put that folder first on PATH."
fi

# The CUDA Toolkit: checked, not installed.
nvcc_bin=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ -z "$nvcc_bin" ]; then
  echo "Not found: the CUDA Toolkit (nvcc). Install CUDA 12 or newer from NVIDIA's CUDA downloads"
  echo "page for ${PRETTY_NAME:-$distro}, then put its bin folder on PATH."
else
  version=$("$nvcc_bin" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1.\2/p')
  major=${version%%.*}
  if [ -n "$major" ] && [ "$major" -lt 12 ]; then
    echo "Found CUDA ${version} at ${nvcc_bin}: CUDA Workbook needs 12 or newer."
  else
    echo "Found CUDA ${version:-?} at ${nvcc_bin}."
    case ":$PATH:" in *":$(dirname "$nvcc_bin"):"*) ;; *) echo "Put $(dirname "$nvcc_bin") on PATH." ;; esac
  fi
fi
echo "Done. Next: ./grade   (README.md, Quick start)"
