#!/usr/bin/env bash
# Builds build/index.js + build/index_bg.wasm with worker-build (release).
# Skips the build when nothing changed since the last one (wrangler dev runs
# the build command twice at start).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

if [ -f build/index_bg.wasm ] && [ -f build/index.js ] && [ -z "${FORCE_BUILD:-}" ]; then
  newer=$(find src durable r2-layout Cargo.toml Cargo.lock -newer build/index_bg.wasm \
            \( -name '*.rs' -o -name 'Cargo.toml' -o -name 'Cargo.lock' \) -not -path '*/target/*' 2>/dev/null | head -n 1)
  if [ -z "$newer" ]; then
    echo "[build] build/ is up to date"
    exit 0
  fi
fi
# HEARTH_BUILD=dev gives a quicker, larger, unoptimised build for iterating.
if [ "${HEARTH_BUILD:-release}" = "dev" ]; then
  echo "[build] worker-build --dev"
  worker-build --dev
else
  echo "[build] worker-build --release"
  worker-build --release
fi
