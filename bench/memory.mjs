// Memory bench pieces (a piece of `npm run bench`, bench/run.mjs):
// Cranfield quality at (1.2, 0.75) and (0.9, 0.4) next to Lucene's figures,
// queries/s natively (Rust, release) and in V8 (hearth-memory built to bare
// wasm32 with the Worker's release profile), bm25s on the same machine
// (in a virtualenv this script makes), add/write/remove latency, cold load and
// bytes per note at 10,000 notes (native and in V8).
//
//   node bench/memory.mjs [--no-bm25s] [--json]
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DATA = process.env.CRANFIELD_DIR || path.resolve(ROOT, "../shared/data/cranfield");
// The collection is not in the repository (a plain clone has no ../shared): the
// Cranfield parts are skipped then, the store figures still run.
const HAS_DATA = existsSync(path.join(DATA, "cran.all.1400"));
const args = new Set(process.argv.slice(2));
const run = (cmd, argv, opts = {}) => execFileSync(cmd, argv, { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"], ...opts });
const benchJson = (out) => {
  const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  return line ? JSON.parse(line.slice("BENCH_JSON ".length)) : null;
};
const results = {};

// 1. Native: Cranfield and the store bench (release; the crate's own examples).
if (HAS_DATA) {
  const cranOut = run("cargo", ["run", "--quiet", "--release", "-p", "hearth-memory", "--example", "cranfield", "--", DATA]);
  console.log(cranOut.split("\n").filter((l) => !l.startsWith("BENCH_JSON")).join("\n"));
  results.cranfield_native = benchJson(cranOut);
} else {
  console.log(`SKIPPED Cranfield (quality, queries/s, bm25s): no cran.all.1400 in ${DATA} (set CRANFIELD_DIR)`);
}
const storeOut = run("cargo", ["run", "--quiet", "--release", "-p", "hearth-memory", "--example", "memory_bench"]);
console.log(storeOut.split("\n").filter((l) => !l.startsWith("BENCH_JSON")).join("\n"));
results.store_native = benchJson(storeOut);

// 2. V8: the crate as bare wasm32.
const wasmDir = path.join(ROOT, "bench/memory/wasm-bench");
// As scripts/build.sh builds the Worker: std compiled from its source with std's
// `optimize_for_size` when the rust-src component is there (BENCH_STD=prebuilt:
// the prebuilt std, to compare the two).
const stdSrc = path.join(run("rustc", ["--print", "sysroot"]).trim(), "lib/rustlib/src/rust/library/std");
const stdFromSource = process.env.BENCH_STD !== "prebuilt" && existsSync(stdSrc);
const stdEnv = stdFromSource
  ? { RUSTC_BOOTSTRAP: "1", CARGO_UNSTABLE_BUILD_STD: "std,panic_abort", CARGO_UNSTABLE_BUILD_STD_FEATURES: "optimize_for_size" }
  : {};
run("cargo", ["build", "--quiet", "--release", "--target", "wasm32-unknown-unknown"], { cwd: wasmDir, env: { ...process.env, ...stdEnv } });
const wasmPath = path.join(wasmDir, "target/wasm32-unknown-unknown/release/hearth_memory_wasm_bench.wasm");
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const w = instance.exports;
const enc = new TextEncoder();
const put = (s) => {
  const bytes = enc.encode(s);
  const ptr = w.alloc(bytes.length);
  new Uint8Array(w.memory.buffer, ptr, bytes.length).set(bytes);
  return [ptr, bytes.length];
};
const smart = (text, fields) => {
  const out = [];
  for (const rec of text.split(/^\.I /m).slice(1)) {
    let cur = null;
    const parts = [];
    for (const line of rec.split("\n").slice(1)) {
      const m = line.match(/^\.([A-Z])\s*$/);
      if (m) cur = m[1];
      else if (fields.includes(cur)) parts.push(line);
    }
    out.push(parts.join(" "));
  }
  return out;
};
let wasmQps = null, indexMs = null;
if (HAS_DATA) {
  const docs = smart(readFileSync(path.join(DATA, "cran.all.1400"), "latin1"), ["T", "W"]);
  const queries = smart(readFileSync(path.join(DATA, "cran.qry"), "latin1"), ["W"]).map(put);
  const t = performance.now();
  w.cranfield_load(...put(docs.join("\0")));
  indexMs = performance.now() - t;
  wasmQps = {};
  for (const [k1, b] of [[1.2, 0.75], [0.9, 0.4]]) {
    for (const [p, l] of queries) w.cranfield_query(p, l, k1, b); // warm-up
    let n = 0;
    const start = performance.now();
    while (performance.now() - start < 1500) {
      for (const [p, l] of queries) w.cranfield_query(p, l, k1, b);
      n += queries.length;
    }
    wasmQps[`${k1},${b}`] = Math.round(n / ((performance.now() - start) / 1000));
  }
}
const NOTES = 10000;
let t = performance.now();
const bytes = w.notes_build(NOTES);
const buildMs = performance.now() - t;
const loads = [], firstSearches = [];
for (let i = 0; i < 7; i++) {
  w.notes_cold_prepare();
  w.notes_prepare(BigInt(1000 + i));
  t = performance.now();
  if (w.notes_cold_load() !== NOTES) throw new Error("cold load failed");
  const loaded = performance.now();
  w.notes_search();
  firstSearches.push(performance.now() - loaded);
  loads.push(loaded - t);
}
loads.sort((a, b) => a - b);
firstSearches.sort((a, b) => a - b);
// The first change after a cold load also hashes the checkpoint's terms (searches
// binary-search them in place): timed on its own.
w.notes_prepare(99n);
t = performance.now();
if (!w.notes_op(0, 99999)) throw new Error("first add failed");
const firstAddMs = performance.now() - t;
const timeOps = (kind, count) => {
  const ts = [];
  for (let i = 0; i < count; i++) {
    w.notes_prepare(BigInt(i + 1));
    const s = performance.now();
    if (!w.notes_op(kind, i)) throw new Error(`op ${kind} failed`);
    ts.push((performance.now() - s) * 1000);
  }
  return ts.reduce((a, b) => a + b, 0) / ts.length;
};
const addUs = timeOps(0, 500), writeUs = timeOps(1, 500), removeUs = timeOps(2, 500);
results.wasm = {
  cranfield_index_ms: indexMs === null ? null : +indexMs.toFixed(1),
  cranfield_qps: wasmQps,
  notes: NOTES,
  build_ms: +buildMs.toFixed(0),
  cold_load_ms_median: +loads[3].toFixed(2),
  first_search_after_load_ms_median: +firstSearches[3].toFixed(3),
  first_add_after_load_ms: +firstAddMs.toFixed(2),
  add_us_mean: +addUs.toFixed(1),
  write_us_mean: +writeUs.toFixed(1),
  remove_us_mean: +removeUs.toFixed(1),
  checkpoint_bytes_per_note: Math.round(bytes / NOTES),
  wasm_bytes: readFileSync(wasmPath).length,
  std: stdFromSource ? "source, optimize_for_size" : "prebuilt",
};
console.log(`\nhearth-memory in V8 (node ${process.version}, wasm as deployed: opt-level z, hearth-memory s, ${stdFromSource ? "std from source, optimize_for_size" : "prebuilt std"}):`);
if (wasmQps) console.log(`| Cranfield queries/s (1.2,0.75) / (0.9,0.4) | ${wasmQps["1.2,0.75"]} / ${wasmQps["0.9,0.4"]} |`);
console.log(`| cold load, ${NOTES} notes (median of 7) | ${results.wasm.cold_load_ms_median} ms |`);
console.log(`| first search after a cold load (median) / first add after it | ${results.wasm.first_search_after_load_ms_median} / ${results.wasm.first_add_after_load_ms} ms |`);
console.log(`| add / write / remove at ${NOTES} notes (mean) | ${results.wasm.add_us_mean} / ${results.wasm.write_us_mean} / ${results.wasm.remove_us_mean} µs |`);
console.log(`| checkpoint bytes per note | ${results.wasm.checkpoint_bytes_per_note} |`);

// 3. bm25s in a virtualenv made here (skipped with --no-bm25s or without python3).
if (!args.has("--no-bm25s") && HAS_DATA) {
  const venv = path.join(ROOT, "target/bench-venv");
  const py = path.join(venv, "bin/python");
  try {
    if (!existsSync(py)) run("python3", ["-m", "venv", venv]);
    run(py, ["-c", "import bm25s, numpy"], { stdio: ["ignore", "ignore", "ignore"] });
  } catch {
    run(py, ["-m", "pip", "install", "--quiet", "bm25s", "numpy"]);
  }
  const out = run(py, [path.join(ROOT, "bench/memory/bm25s_cranfield.py"), DATA]);
  console.log("\n" + out.split("\n").filter((l) => !l.startsWith("BENCH_JSON")).join("\n"));
  results.bm25s = benchJson(out);
}
if (args.has("--json")) console.log("BENCH_JSON " + JSON.stringify(results));
