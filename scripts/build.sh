#!/usr/bin/env bash
# Builds build/index.js + build/index_bg.wasm with worker-build (release).
# Skips the build when nothing changed since the last one (wrangler dev runs
# the build command twice at start).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

# The web console: static assets, seconds to build, so always rebuilt.
node scripts/build-console.mjs

if [ -f build/index_bg.wasm ] && [ -f build/index.js ] && [ -z "${FORCE_BUILD:-}" ]; then
  # -print -quit, not `| head -n 1`: with pipefail, head closing the pipe
  # early killed the script (exit 141, no build) when many files were newer.
  newer=$(find src durable r2-layout Cargo.toml Cargo.lock scripts/build.sh -newer build/index_bg.wasm \
            \( -name '*.rs' -o -name '*.js' -o -name 'Cargo.toml' -o -name 'Cargo.lock' -o -name build.sh \) -not -path '*/target/*' \
            -print -quit 2>/dev/null || true)
  if [ -z "$newer" ]; then
    echo "[build] build/ is up to date"
    exit 0
  fi
fi
# worker-build downloads any of these it is not given (from GitHub, which may be
# out of reach); scripts/setup.sh installs them, so stop here if one is missing.
if [ -z "${WASM_BINDGEN_BIN:-}" ]; then
  echo "[build] no wasm-bindgen $(bindgen_lock_version) (the version in Cargo.lock) in $CARGO_TOOLS_BIN or on PATH: run bash scripts/setup.sh" >&2
  exit 1
fi
for bin in "$WASM_OPT_BIN" "$ESBUILD_BIN"; do
  command -v "$bin" >/dev/null || { echo "[build] $bin is missing: run bash scripts/setup.sh" >&2; exit 1; }
done
# HEARTH_BUILD=dev gives a quicker, larger, unoptimised build for iterating.
if [ "${HEARTH_BUILD:-release}" = "dev" ]; then
  echo "[build] worker-build --dev"
  worker-build --dev
else
  # std from source, optimised for size (issue 37 item 4). The prebuilt std is
  # compiled for speed; rebuilding it with this profile (opt-level "z") and std's
  # own `optimize_for_size` feature (smaller sorts, still O(n log n), and smaller
  # number formatting and parsing) takes 21 KiB gzip off the upload (1,104.3 -> 1,083.4 KiB,
  # docs/notes/stdsize.md). cargo's `build-std` is unstable: RUSTC_BOOTSTRAP=1
  # lets this pinned stable compiler use it, for this build only (the native
  # tests and clippy use the prebuilt std). Panics keep their messages and
  # places. HEARTH_STD=prebuilt builds with the prebuilt std (as does a Rust
  # without the rust-src component, which scripts/setup.sh adds with rustup).
  std_src="$(rustc --print sysroot)/lib/rustlib/src/rust/library/std"
  if [ "${HEARTH_STD:-source}" = "source" ] && [ -d "$std_src" ]; then
    export RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_BUILD_STD=std,panic_abort CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size
    std_kind="std from source, optimize_for_size"
  else
    [ "${HEARTH_STD:-source}" = "source" ] && echo "[build] no rust-src component ($std_src): building with the prebuilt std (about 21 KiB gzip larger)" >&2
    std_kind="prebuilt std"
  fi
  echo "[build] worker-build --release ($std_kind)"
  worker-build --release
  # Which std this build has, for the bench's upload row (not uploaded: target/).
  mkdir -p target
  echo "$std_kind" > target/hearth-std.txt
  # worker-build keeps the wasm name section (~340 kB raw) for stack traces;
  # the upload is smaller without it. HEARTH_KEEP_NAMES=1 keeps it for debugging.
  # bench/size/features.mjs reads the names (the upload's size by feature) from a copy.
  # The same pass also runs -Oz a second time (with Cargo.toml's inlining limit):
  # worker-build's single run leaves work a second finds (issue 23 item 2, measured
  # with `npm run size`: 1,104.8 -> 1,101.9 KiB gzip, ~16 s more build).
  mkdir -p target
  cp build/index_bg.wasm target/hearth-named.wasm
  if [ -z "${HEARTH_KEEP_NAMES:-}" ]; then
    wasm-opt build/index_bg.wasm -Oz --one-caller-inline-max-function-size 0 --strip-debug --strip-producers \
      --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int --enable-bulk-memory \
      --enable-multivalue --enable-reference-types --enable-exception-handling \
      -o build/index_bg.wasm
    echo "[build] stripped names: $(wc -c < build/index_bg.wasm) bytes"
  fi
fi
