#!/usr/bin/env bash
# The whole suite: formatting and lints first (they take seconds to minutes,
# the rest takes longer), native crate tests, then end-to-end tests of the
# built WASM in workerd (Miniflare) against local Telegram/LLM stand-ins.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh

echo "[test] cargo fmt --check (rustfmt.toml)"
if ! cargo fmt --all -- --check; then
  echo "[test] FAILED: the code above is not formatted as rustfmt.toml says; run \`cargo fmt --all\` and commit the result" >&2
  exit 1
fi

echo "[test] cargo clippy (warnings are errors)"
if ! cargo clippy --workspace --all-targets --quiet -- -D warnings; then
  echo "[test] FAILED: clippy found the problems above; fix them (or allow one lint where it is wrong, with a comment saying why)" >&2
  exit 1
fi

echo "[test] cargo test (native crates)"
cargo test --workspace --exclude hearth --quiet
cargo test -p hearth --lib --quiet
bash scripts/build.sh
echo "[test] end-to-end in workerd"
node --test --test-concurrency=1 tests/
