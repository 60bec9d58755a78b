#!/usr/bin/env bash
# Builds and runs tests/downstream, a crate that depends on coexec by path,
# the way a user's crate outside this repository would: from a scratch
# directory (so that this repository's .cargo/config.toml, which points
# shaderc-sys at .shaderc, does not apply) with SHADERC_LIB_DIR exported as
# the README's "Building a crate that depends on coexec" says.
#
#   bash scripts/downstream.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export SHADERC_LIB_DIR="${SHADERC_LIB_DIR:-$(bash "$root/scripts/prepare-shaderc.sh")}"
# The workspace's target dir: the dependencies built for the tests are reused.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$root/tests/downstream/." "$scratch/"
# The path dependency made absolute, and the workspace's lock file, so that the
# same dependency versions are used (cargo only adds this crate to it).
sed -i "s|path = \"../..\"|path = \"$root\"|" "$scratch/Cargo.toml"
cp "$root/Cargo.lock" "$scratch/Cargo.lock"
cd "$scratch"
cargo run --release --offline
