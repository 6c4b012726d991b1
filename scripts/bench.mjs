#!/usr/bin/env node
// Collects the bench rows: upload size (from `wrangler deploy --dry-run`),
// per-turn latency in Miniflare with an instant LLM stand-in, and whatever
// each feature's module in tests/bench/ adds (`export async function bench()`
// returning rows {name, value, target?}).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { OWNER, startHearth, tgUpdate } from "../tests/helpers/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const rows = [];
const row = (name, value, target = "") => rows.push({ name, value: String(value), target });

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function sizes(dryRunFile) {
  const text = fs.readFileSync(dryRunFile, "utf8");
  const m = text.match(/Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/);
  if (m) row("upload size (wrangler deploy --dry-run)", `${m[1]} KiB raw / ${m[2]} KiB gzip`);
  const wasm = fs.statSync(path.join(ROOT, "build/index_bg.wasm")).size;
  row("build/index_bg.wasm", `${(wasm / 1024).toFixed(1)} KiB`);
}

async function turnLatency(turns = 220, warmup = 20) {
  const h = await startHearth();
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    const acks = [];
    const total = [];
    for (let i = 0; i < turns; i++) {
      const before = h.telegram.sent().length;
      const t0 = performance.now();
      const res = await h.sendUpdate(tgUpdate({ from: OWNER, text: `bench ${i}` }));
      const t1 = performance.now();
      if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
      await h.until(() => h.telegram.sent().length > before, { what: `reply ${i}`, timeoutMs: 10000 });
      const t2 = performance.now();
      if (i >= warmup) {
        acks.push(t1 - t0);
        total.push(t2 - t0);
      }
    }
    acks.sort((a, b) => a - b);
    total.sort((a, b) => a - b);
    const n = total.length;
    row(`webhook ack latency (n=${n})`, `p50 ${percentile(acks, 50).toFixed(1)} ms, p99 ${percentile(acks, 99).toFixed(1)} ms`);
    row(`per-turn latency, webhook → reply, instant LLM (n=${n})`, `p50 ${percentile(total, 50).toFixed(1)} ms, p99 ${percentile(total, 99).toFixed(1)} ms`);
  } finally {
    await h.close();
  }
}

async function featureBenches() {
  const dir = path.join(ROOT, "tests/bench");
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".mjs")).sort()) {
    // Scripts without a bench() export run on their own (scripts/bench.sh).
    if (!/export async function bench\(/.test(fs.readFileSync(path.join(dir, f), "utf8"))) continue;
    try {
      const mod = await import(pathToFileURL(path.join(dir, f)));
      if (typeof mod.bench !== "function") continue;
      for (const r of (await mod.bench()) || []) row(r.name, r.value, r.target || "");
    } catch (e) {
      row(`${f}`, `failed: ${e.message}`);
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dry = process.argv[2];
  if (dry && fs.existsSync(dry)) sizes(dry);
  await turnLatency();
  await featureBenches();
  const w = Math.max(...rows.map((r) => r.name.length), 6);
  const v = Math.max(...rows.map((r) => r.value.length), 5);
  console.log(`\n| ${"metric".padEnd(w)} | ${"value".padEnd(v)} | target |`);
  console.log(`|${"-".repeat(w + 2)}|${"-".repeat(v + 2)}|--------|`);
  for (const r of rows) console.log(`| ${r.name.padEnd(w)} | ${r.value.padEnd(v)} | ${r.target} |`);
  fs.mkdirSync(path.join(ROOT, ".bench"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, ".bench/results.json"), JSON.stringify(rows, null, 2));
}
