#!/usr/bin/env bash
# `npm run bench`: sizes and speeds, printed as a table (a benchmark, not a test).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh >&2
bash scripts/build.sh >&2
mkdir -p .bench
wrangler deploy --dry-run --outdir dist > .bench/dry-run.txt 2>&1 || { cat .bench/dry-run.txt >&2; exit 1; }
node scripts/bench.mjs .bench/dry-run.txt
# The memory bench: Cranfield quality and speed natively, in V8, and bm25s
# (in a virtualenv it makes under target/bench-venv).
echo
echo "## BM25 memory"
node tests/bench/memory.mjs
