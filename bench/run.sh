#!/usr/bin/env bash
# `npm run bench [-- piece ...]`: sizes and speeds, printed as a table (a
# benchmark, not a test). Installs and builds what is missing, measures the
# upload with `wrangler deploy --dry-run`, then runs the pieces of
# bench/run.mjs (all, or the ones named).
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
bash scripts/setup.sh >&2
bash scripts/build.sh >&2
mkdir -p bench/out
wrangler deploy --dry-run --outdir dist > bench/out/dry-run.txt 2>&1 || { cat bench/out/dry-run.txt >&2; exit 1; }
node bench/run.mjs bench/out/dry-run.txt "$@"
