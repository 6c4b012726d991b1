#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and run Hearth, and nothing
# that is already there. Used by `npm run dev`, `npm test` and `npm run bench`.
# Only the package registries are needed (crates.io, npm).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

say() { printf '[setup] %s\n' "$*"; }

command -v cargo >/dev/null || { echo "[setup] cargo not found: install Rust (https://rustup.rs) first" >&2; exit 1; }
command -v node >/dev/null || { echo "[setup] node not found: install Node.js 20+ first" >&2; exit 1; }

# The wasm target and the components `npm test` uses (a minimal rustup profile,
# as in the official `rust` image, has neither rustfmt nor clippy).
if command -v rustup >/dev/null; then
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  missing=()
  cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
  cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
  # The release build compiles std from its source, optimised for size
  # (scripts/build.sh says why); the source is the rust-src component.
  [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ] || missing+=(rust-src)
  if [ ${#missing[@]} -gt 0 ]; then
    say "adding the ${missing[*]} component(s)"
    rustup component add "${missing[@]}"
  fi
else
  # Rust from a distribution package: nothing to add with, so say what is missing.
  [ -d "$(rustc --print target-libdir --target wasm32-unknown-unknown 2>/dev/null)" ] \
    || { echo "[setup] the wasm32-unknown-unknown target is missing and there is no rustup to add it" >&2; exit 1; }
  for c in fmt clippy; do
    cargo "$c" --version >/dev/null 2>&1 || { echo "[setup] cargo $c is missing and there is no rustup to add it" >&2; exit 1; }
  done
fi

# cargo install writes to $CARGO_TOOLS_BIN (scripts/env.sh), which is on PATH.
WORKER_BUILD_VERSION=0.8.7
if ! worker-build --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION"; then
  say "installing worker-build $WORKER_BUILD_VERSION (takes several minutes, once)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION" --locked --force
  worker-build --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION" \
    || { echo "[setup] worker-build was installed but is not in $CARGO_TOOLS_BIN nor on PATH" >&2; exit 1; }
fi

# wasm-bindgen-cli must be exactly the version of the wasm-bindgen crate in Cargo.lock.
BINDGEN_VERSION=$(bindgen_lock_version)
if [ -z "$BINDGEN_VERSION" ]; then
  echo "[setup] could not read the wasm-bindgen version from Cargo.lock" >&2; exit 1
fi
if ! find_wasm_bindgen >/dev/null; then
  say "installing wasm-bindgen-cli $BINDGEN_VERSION (takes several minutes, once)"
  # No --locked: its lock file names a crate version that is not on crates.io.
  cargo install wasm-bindgen-cli --version "$BINDGEN_VERSION" --force
  find_wasm_bindgen >/dev/null \
    || { echo "[setup] wasm-bindgen $BINDGEN_VERSION was installed but is not in $CARGO_TOOLS_BIN nor on PATH" >&2; exit 1; }
fi

# npm packages: install when missing or when package.json changed since.
if [ ! -x node_modules/.bin/wrangler ] || [ ! -x node_modules/.bin/wasm-opt ] \
   || [ package.json -nt node_modules/.package-lock.json ] \
   || { [ -f package-lock.json ] && [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  say "installing npm packages"
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
fi
