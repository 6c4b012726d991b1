#!/usr/bin/env bash
# The whole suite: native crate tests, then end-to-end tests of the built
# WASM in workerd (Miniflare) against local Telegram/LLM stand-ins.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
echo "[test] cargo test (native crates)"
cargo test --workspace --exclude hearth --quiet
cargo test -p hearth --lib --quiet
bash scripts/build.sh
echo "[test] end-to-end in workerd"
node --test --test-concurrency=1 tests/
