#!/usr/bin/env bash
# Builds one static shaderc archive from Debian's packages (libshaderc-dev,
# glslang-dev, spirv-tools) and prints the directory to use as SHADERC_LIB_DIR.
#
# Debian's libshaderc.so cannot be linked by shaderc-sys (glslang symbols are
# missing from it), and building shaderc from source costs minutes on 2 cores;
# merging the static archives takes about a second.
#
#   export SHADERC_LIB_DIR=$(scripts/prepare-shaderc.sh)
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/.shaderc}"
lib=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$out"
if [ ! -f "$out/libshaderc_combined.a" ] || [ "$lib/libshaderc_combined.a" -nt "$out/libshaderc_combined.a" ]; then
  {
    echo "create $out/libshaderc_combined.a.tmp"
    for a in shaderc_combined glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler HLSL SPIRV \
             glslang-default-resource-limits SPIRV-Tools-opt SPIRV-Tools; do
      [ -f "$lib/lib$a.a" ] || { echo "missing $lib/lib$a.a (install libshaderc-dev glslang-dev spirv-tools)" >&2; exit 1; }
      echo "addlib $lib/lib$a.a"
    done
    echo save
    echo end
  } | ar -M
  mv "$out/libshaderc_combined.a.tmp" "$out/libshaderc_combined.a"
fi
echo "$out"
