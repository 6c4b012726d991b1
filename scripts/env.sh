# Sourced by the other scripts: tool paths and the switches that keep
# wrangler, Miniflare and worker-build off the network.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Where `cargo install` puts binaries, in cargo's own order: CARGO_INSTALL_ROOT,
# else CARGO_HOME, else its default under the home directory. Images such as the
# official `rust` one set CARGO_HOME=/usr/local/cargo, so the default is only a
# fallback.
CARGO_TOOLS_BIN="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
export PATH="$CARGO_TOOLS_BIN:$ROOT/node_modules/.bin:$PATH"

# The wasm-bindgen CLI must be exactly the version of the wasm-bindgen crate in Cargo.lock.
bindgen_lock_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock"
}

# Prints the path of an installed wasm-bindgen of that version (a WASM_BINDGEN_BIN
# set by the caller first, then the cargo install directory, then PATH), or fails.
find_wasm_bindgen() {
  local want bin
  want=$(bindgen_lock_version)
  [ -n "$want" ] || return 1
  for bin in "${WASM_BINDGEN_BIN:-}" "$CARGO_TOOLS_BIN/wasm-bindgen" "$(command -v wasm-bindgen 2>/dev/null || true)"; do
    [ -n "$bin" ] && [ -x "$bin" ] || continue
    if [ "$("$bin" --version 2>/dev/null | awk '{ print $2 }')" = "$want" ]; then
      printf '%s\n' "$bin"
      return 0
    fi
  done
  return 1
}

# worker-build downloads wasm-bindgen, wasm-opt and esbuild from GitHub unless
# these name binaries that exist; scripts/build.sh refuses to run without them.
# Before scripts/setup.sh has installed wasm-bindgen this stays unset.
if WASM_BINDGEN_BIN=$(find_wasm_bindgen); then export WASM_BINDGEN_BIN; else unset WASM_BINDGEN_BIN; fi
export WASM_OPT_BIN="${WASM_OPT_BIN:-$ROOT/node_modules/.bin/wasm-opt}"
export ESBUILD_BIN="${ESBUILD_BIN:-$ROOT/node_modules/.bin/esbuild}"
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_HIDE_BANNER=true
export MINIFLARE_ASSERT_BODIES_CONSUMED=false
