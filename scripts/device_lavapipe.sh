#!/usr/bin/env bash
# Adds Mesa's lavapipe (the CPU Vulkan driver) to the bundle for the GPU
# machine (.device/, see ../shared/device/bundle.sh), so that the SPIR-V CPU
# path (`--cpu-impl spirv`, EngineOptions::spirv_cpu) finds a CPU Vulkan
# device there beside the NVIDIA one.
#
#   ../shared/device/bundle.sh target/release/coexec ...   # first
#   scripts/device_lavapipe.sh [--check]
#
# The amd64 .debs of mesa-vulkan-drivers and of the libraries lavapipe links
# are downloaded with `apt-get download`; only what lavapipe needs is kept
# (libvulkan_lvp.so, its ICD json, and each library its ldd names that the
# GPU machine's C runtime does not give: LLVM, libdrm, libwayland, libxcb,
# libzstd, ICU, ...) and repacked as one xz-compressed .deb into .device/gl/,
# which .device/env.sh extracts into / (dpkg -x) on the GPU machine. The
# line appended to env.sh adds lvp_icd.x86_64.json to VK_DRIVER_FILES.
#
# --check: extract the package into a temporary root and check that ldd of
# its libvulkan_lvp.so resolves every library against that root (or the C
# runtime), and that the bundle stays under 64 MiB.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
arch=x86_64-linux-gnu
libdir=/usr/lib/$arch
icd=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
deb=.device/gl/coexec-lavapipe_1_amd64.deb
limit=$((64 * 1024 * 1024))
# What the GPU machine has (bundle.sh leaves the same out).
runtime='^(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux-x86-64)\.so'

check() {
  local root
  root=$(mktemp -d)
  dpkg -x "$deb" "$root"
  test -f "$root$icd" || { echo "no ICD json in $deb" >&2; return 1; }
  local lvp="$root$libdir/libvulkan_lvp.so"
  # Resolve against the extracted root first; every library must come
  # from there or be the C runtime.
  local bad
  bad=$(LD_LIBRARY_PATH="$root$libdir" ldd "$lvp" | awk -v r="$root" -v rt="$runtime" '
    /not found/ {print; next}
    /=> \// { split($1, n, "/"); if (index($3, r) != 1 && $1 !~ rt) print }')
  rm -rf "$root"
  if [ -n "$bad" ]; then
    echo "libraries not from the package:" >&2
    echo "$bad" >&2
    return 1
  fi
  local size
  size=$(du -sb .device | cut -f1)
  echo "lavapipe: $(du -h "$deb" | cut -f1) package; .device is $((size / 1024 / 1024)) MiB of 64"
  [ "$size" -lt "$limit" ] || { echo ".device is over 64 MiB" >&2; return 1; }
}

if [ "${1:-}" = --check ]; then
  check
  exit
fi

[ -f .device/env.sh ] || { echo "run ../shared/device/bundle.sh first (.device/env.sh)" >&2; exit 1; }
[ -f "$libdir/libvulkan_lvp.so" ] || {
  echo "lavapipe is not installed here (mesa-vulkan-drivers): its ldd gives the library list" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The libraries lavapipe needs beyond the C runtime, and their packages.
mapfile -t libs < <(ldd "$libdir/libvulkan_lvp.so" | awk '/=> \//{print $1}' | grep -Ev "$runtime")
pkgs=(mesa-vulkan-drivers)
for l in "${libs[@]}"; do
  p=$(dpkg -S "*/$l" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$p" ] || { echo "no package has $l" >&2; exit 1; }
  pkgs+=("$p")
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
lists=/tmp/amd64-lists
mkdir -p "$lists/partial"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${o[@]}" update -qq >/dev/null
(cd "$work" && apt-get "${o[@]}" download "${pkgs[@]}" >/dev/null)
mkdir -p "$work/x" "$work/pkg/DEBIAN" "$work/pkg$libdir" "$work/pkg$(dirname "$icd")"
for d in "$work"/*.deb; do dpkg -x "$d" "$work/x"; done
# Debian 12 ships libraries under /usr/lib and /lib (usrmerge).
find_lib() {
  local l=$1
  for d in "$work/x$libdir" "$work/x/lib/$arch"; do
    [ -e "$d/$l" ] && { echo "$d/$l"; return; }
  done
  return 1
}
cp -L "$work/x$libdir/libvulkan_lvp.so" "$work/pkg$libdir/"
cp "$work/x$icd" "$work/pkg$icd"
for l in "${libs[@]}"; do
  src=$(find_lib "$l") || { echo "$l is not in the downloaded packages" >&2; exit 1; }
  cp -L "$src" "$work/pkg$libdir/$l"
done
cat > "$work/pkg/DEBIAN/control" <<EOF
Package: coexec-lavapipe
Version: 1
Architecture: amd64
Maintainer: coexec
Description: Mesa lavapipe and the libraries it links, for the GPU machine
EOF
mkdir -p .device/gl
dpkg-deb -Zxz -z9 --root-owner-group -b "$work/pkg" "$deb" >/dev/null
line='export VK_DRIVER_FILES="${VK_DRIVER_FILES:+$VK_DRIVER_FILES:}/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"'
grep -qxF "$line" .device/env.sh || echo "$line" >> .device/env.sh
check
