#!/usr/bin/env bash
# Installs what coexec needs on Debian 12 (run as root or with sudo) and
# prepares the static shaderc archive. Safe to run again.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(build-essential pkg-config cmake valgrind
      libvulkan1 libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
      libhwloc-dev libudev-dev
      libshaderc-dev glslang-dev spirv-tools
      # coexec-mpi (mpi/, outside the default build): Open MPI, and libclang
      # for rsmpi's bindgen.
      libopenmpi-dev openmpi-bin libclang-dev clang)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install a Rust toolchain (https://rustup.rs) first" >&2
  exit 1
fi
"$(dirname "$0")/prepare-shaderc.sh" >/dev/null
echo "coexec: set-up done"
