#!/usr/bin/env bash
# Lays out a CUDA 12.4 toolkit (nvcc, runtime, cuBLAS, cuRAND, CUPTI, CUB/Thrust, NVTX, the
# profiler API) in a folder of its own, so that CI can prove the workbook builds with the oldest
# CUDA 12 that students use.
#
#   tools/ci/cuda12_toolkit.sh PREFIX     lay it out at PREFIX (about 1 GB downloaded)
#   tools/ci/cuda12_toolkit.sh --help
#
# Where the parts come from (every version pinned below):
#  - PyPI's nvidia-*-cu12 wheels, through pip and whatever index pip is configured with:
#    headers and libraries (runtime, CUPTI, cuBLAS, cuRAND, CCCL, NVTX, cuda_profiler_api.h),
#    ptxas and libnvvm. They hold no compiler driver (nvcc, cicc, cudafe++, fatbinary, nvlink).
#  - Debian's nvidia-cuda-toolkit and nvidia-cuda-dev (trixie, non-free), from the Debian mirror
#    apt is already configured with: the compiler driver, and the static runtime and the libcuda
#    stub. They are downloaded with a private apt state and unpacked, never installed.
# The script names no host. It writes only PREFIX and a temporary folder (removed at the end);
# the system's apt state and sources are left alone. It refuses a PREFIX that holds anything
# but an earlier layout of its own.
#
# Environment:
#   WORKBOOK_DEBIAN_MIRROR   a Debian archive URI to use instead of the one apt is configured with
#                            (needed on Ubuntu, whose archive has no trixie)
#   TMPDIR                   where the temporary folder goes (about 2.5 GB at the peak)
#
# Build with it, keeping CUDA 13 (the build machine's /usr/local/cuda) out of the compile and
# the link (tools/ci/README.md says why):
#   env -u LIBRARY_PATH -u CPATH -u CUDA_HOME PATH=PREFIX/bin:/usr/sbin:/usr/bin:/sbin:/bin \
#     cmake -S . -B build/cuda12 -G Ninja -DCMAKE_CUDA_COMPILER=PREFIX/bin/nvcc \
#           -DCUDAToolkit_ROOT=PREFIX -DCMAKE_CUDA_ARCHITECTURES="75;86;90"
set -euo pipefail

# Pinned: PyPI wheels with their SHA-256 (pip checks them), Debian packages by version (apt
# checks them against the archive's signed index). 12.4 is the oldest CUDA 12 these sources
# give a compiler driver for: no other CUDA 12 nvcc is on PyPI or in Debian.
CUDA_VERSION=12.4
WHEELS=(
  "nvidia-cuda-nvcc-cu12==12.4.131 --hash=sha256:e4c9a35435c3b0e36c6397c5696334c9ea6650e524736cbd1c5d345ea099bb04"
  "nvidia-cuda-runtime-cu12==12.4.127 --hash=sha256:64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5"
  "nvidia-cuda-cupti-cu12==12.4.127 --hash=sha256:9dec60f5ac126f7bb551c055072b69d85392b13311fcc1bcda2202d172df30fb"
  "nvidia-cublas-cu12==12.4.5.8 --hash=sha256:2fc8da60df463fdefa81e323eef2e36489e1c94335b5358bcb38360adf75ac9b"
  "nvidia-cuda-cccl-cu12==12.4.127.post1 --hash=sha256:2027fa5fc75fbee703bf24e8275a40a605cf94a3e8fef8a7187897d49b34facb"
  "nvidia-nvtx-cu12==12.4.127 --hash=sha256:781e950d9b9f60d8241ccea575b32f5105a5baf4c2351cab5256a24869f12a1a"
  "nvidia-cuda-profiler-api-cu12==12.4.127 --hash=sha256:7d80d1d8cfedc4b31b3df260f75e339a51322b25ff41f2a47edb5b2139b8a58f"
  "nvidia-curand-cu12==10.3.5.147 --hash=sha256:a88f583d4e0bb643c49743469964103aa59f7f708d862c3ddb0fc07f851e3b8b"
)
DEBIAN_SUITE=trixie
DEBIAN_COMPONENT=non-free
DEBS=(nvidia-cuda-toolkit=12.4.131~12.4.1-2 nvidia-cuda-dev=12.4.127~12.4.1-2)
DEBIAN_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
STAMP=.workbook-cuda12-toolkit  # marks a PREFIX this script laid out

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "cuda12_toolkit.sh: $*" >&2; exit 1; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
  -*) echo "cuda12_toolkit.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { echo "cuda12_toolkit.sh: one PREFIX, please (try --help)" >&2; exit 2; }
prefix=$1
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
prefix=${prefix%/}
[ -n "$prefix" ] || die "PREFIX must not be /"

# What it needs, checked before anything is downloaded.
[ "$(uname -m)" = x86_64 ] || die "x86_64 only: the pinned wheels and Debian packages are amd64 builds (this is $(uname -m))"
for tool in apt-get dpkg-deb tar; do
  command -v "$tool" >/dev/null || die "needs $tool (Debian's apt and dpkg) and cannot find it"
done
[ -r "$DEBIAN_KEYRING" ] || die "needs Debian's archive keys in $DEBIAN_KEYRING (package debian-archive-keyring) to check what apt downloads"
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -m pip --version >/dev/null 2>&1; then python=$candidate; break; fi
done
[ -n "$python" ] || die "needs pip: neither the python3 on PATH nor /usr/bin/python3 has it (apt-get install python3-pip)"
if [ -e "$prefix" ]; then
  if [ -n "$(ls -A "$prefix" 2>/dev/null)" ] && [ ! -e "$prefix/$STAMP" ]; then
    die "$prefix exists and is not a toolkit this script laid out: give an empty or new folder"
  fi
fi

# The Debian archive apt already uses for this release's main suite (tools/apt_mirror.sh, which
# tools/install_deps.sh uses too).
# shellcheck source=tools/apt_mirror.sh
. "$(dirname "$0")/../apt_mirror.sh"
debian_mirror() {
  local codename
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release 2>/dev/null; [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0  # not Debian: its archive has no trixie
  apt_mirror "$codename"
}
mirror=${WORKBOOK_DEBIAN_MIRROR:-$(debian_mirror)}
[ -n "$mirror" ] || die "found no Debian mirror in apt's configuration (this is not Debian, or its sources name none); set WORKBOOK_DEBIAN_MIRROR to a Debian archive URI"

work=$(mktemp -d "${TMPDIR:-/tmp}/cuda12-toolkit.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "== $*"; }

step "PyPI wheels (pip's configured index): ${#WHEELS[@]} pinned packages"
printf '%s\n' "${WHEELS[@]}" > "$work/wheels.txt"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "$python" -m pip download --quiet --no-cache-dir --no-deps --only-binary=:all: --require-hashes \
  -r "$work/wheels.txt" -d "$work/wheels" \
  || die "pip could not download the pinned wheels (above): is pip's package index reachable?"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --no-cache-dir --no-deps --no-index --no-compile \
  --target "$work/site" "$work"/wheels/*.whl || die "pip could not unpack the wheels (above)"

step "Debian packages from $mirror ($DEBIAN_SUITE $DEBIAN_COMPONENT): ${DEBS[*]}"
mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/apt/cache" "$work/apt/preferences.d" "$work/debs"
echo "deb [signed-by=$DEBIAN_KEYRING] $mirror $DEBIAN_SUITE $DEBIAN_COMPONENT" > "$work/apt/sources.list"
# A private apt: its own sources, lists, caches and (empty) dpkg status; the system's are not read or written.
apt_private=(-o Dir::Etc::sourcelist="$work/apt/sources.list" -o Dir::Etc::sourceparts=-
  -o Dir::Etc::preferences=/dev/null -o Dir::Etc::preferencesparts="$work/apt/preferences.d"
  -o Dir::State="$work/apt" -o Dir::State::Lists="$work/apt/lists" -o Dir::State::status=/dev/null
  -o Dir::Cache="$work/apt/cache" -o Dir::Cache::Archives="$work/apt/archives"
  -o APT::Architecture=amd64 -o Acquire::Languages=none
  -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -o Debug::NoLocking=true)
apt-get "${apt_private[@]}" -q update > "$work/apt-update.log" 2>&1 || {
  cat "$work/apt-update.log" >&2
  die "apt could not read $DEBIAN_SUITE's index from $mirror (above); a Debian mirror is needed (set WORKBOOK_DEBIAN_MIRROR)"
}
if ! (cd "$work/debs" && apt-get "${apt_private[@]}" -q download "${DEBS[@]}"); then
  echo "What $mirror has in $DEBIAN_SUITE now:" >&2
  apt-cache "${apt_private[@]}" madison "${DEBS[@]%%=*}" >&2 || true
  die "apt could not download the pinned ${DEBS[*]} (above); if the mirror moved on, pin the versions it lists in $0"
fi
mkdir -p "$work/deb-toolkit" "$work/deb-dev"
dpkg-deb -x "$work"/debs/nvidia-cuda-toolkit_*.deb "$work/deb-toolkit"
dev_libs=(libcudart_static.a libcudadevrt.a libculibos.a stubs/libcuda.so)
dpkg-deb --fsys-tarfile "$work"/debs/nvidia-cuda-dev_*.deb \
  | tar -x -C "$work/deb-dev" "${dev_libs[@]/#/./usr/lib/x86_64-linux-gnu/}"
rm -f "$work"/debs/nvidia-cuda-dev_*.deb  # 900 MB, of which 4 files are used

step "Laying out CUDA $CUDA_VERSION at $prefix"
site=$work/site/nvidia deb=$work/deb-toolkit dev=$work/deb-dev/usr/lib/x86_64-linux-gnu
rm -rf "$prefix"
mkdir -p "$prefix"/{bin/crt,nvvm/bin,nvvm/lib64,include,lib64/stubs}
# The compiler driver and the front end from Debian (nvcc finds cicc in nvvm/bin, the rest beside it) ...
cp "$deb"/usr/lib/nvidia-cuda-toolkit/bin/nvcc "$prefix"/bin/
cp "$deb"/usr/lib/nvidia-cuda-toolkit/bin/cicc "$prefix"/nvvm/bin/
cp "$deb"/usr/lib/nvidia-cuda-toolkit/bin/crt/*.stub "$prefix"/bin/crt/
for tool in cudafe++ fatbinary nvlink bin2c nvprune cuobjdump cu++filt; do cp "$deb/usr/bin/$tool" "$prefix"/bin/; done
# ... the assembler, NVVM, headers and libraries from the wheels ...
cp "$site"/cuda_nvcc/bin/ptxas "$prefix"/bin/
cp "$site"/cuda_nvcc/nvvm/lib64/libnvvm.so* "$prefix"/nvvm/lib64/
cp -r "$site"/cuda_nvcc/nvvm/libdevice "$prefix"/nvvm/
[ -d "$site"/cuda_nvcc/nvvm/include ] && cp -r "$site"/cuda_nvcc/nvvm/include "$prefix"/nvvm/
for part in cuda_nvcc cuda_runtime cuda_cupti cublas cuda_cccl nvtx cuda_profiler_api curand; do cp -r "$site/$part"/include/. "$prefix"/include/; done
for part in cuda_runtime cuda_cupti cublas curand; do cp -a "$site/$part"/lib/. "$prefix"/lib64/; done
[ -d "$site"/cuda_cccl/lib/cmake ] && cp -r "$site"/cuda_cccl/lib/cmake "$prefix"/lib64/
find "$prefix" \( -name __init__.py -o -name __pycache__ \) -prune -exec rm -rf {} +
(cd "$prefix"/lib64 && for lib in *.so.[0-9] *.so.[0-9][0-9]; do [ -e "$lib" ] && ln -sf "$lib" "${lib%.*}"; done)
# ... and the static runtime and the driver stub from Debian's nvidia-cuda-dev.
cp "$dev"/libcudart_static.a "$dev"/libcudadevrt.a "$dev"/libculibos.a "$prefix"/lib64/
cp "$dev"/stubs/libcuda.so "$prefix"/lib64/stubs/
cat > "$prefix"/bin/nvcc.profile <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE

step "Checking it: nvcc compiles and links a kernel for sm_75, sm_86 and sm_90"
"$prefix"/bin/nvcc --version | grep -q "release $CUDA_VERSION," || die "$prefix/bin/nvcc is not CUDA $CUDA_VERSION's"
cat > "$work/check.cu" <<'CU'
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() { twice<<<1, 32>>>(nullptr); std::printf("%d\n", CUDART_VERSION); }
CU
(cd "$work" && env -u LIBRARY_PATH -u CPATH -u CUDA_HOME PATH="$prefix/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
   "$prefix"/bin/nvcc -gencode arch=compute_75,code=sm_75 -gencode arch=compute_86,code=sm_86 \
   -gencode arch=compute_90,code=sm_90 -o check check.cu) || die "the toolkit at $prefix could not compile a kernel (above)"
touch "$prefix/$STAMP"
echo "CUDA $CUDA_VERSION is at $prefix: $("$prefix"/bin/nvcc --version | tail -n1)"
