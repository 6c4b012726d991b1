#!/usr/bin/env node
// `npm run bench`: every piece of PIECES in order, their rows in one table,
// then the reports of the pieces that print their own (bench/README.md).
//
//   node bench/run.mjs [dry-run output] [piece ...]    (bench/run.sh builds first)
//   BENCH_ONLY=turns,api node bench/run.mjs ...        (the same, by environment)
//
// Rows go to bench/out/results.json too. A piece must not import this file:
// this file's top-level await is still running when it imports the piece,
// and node would stop on the cycle without a word (exit 13).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { sizeBudgetRows } from "./size/features.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");
const OUT = path.join(HERE, "out");

/**
 * The pieces, in the order they run. `rows`: a module of bench/ whose
 * `bench()` returns rows `{name, value, target?}` for the table. `report`: a
 * script of bench/ run as its own process after the table, its output
 * printed as it is (figures that are tables of their own). Add a piece here.
 */
export const PIECES = [
  { name: "turns", rows: "turns.mjs" },
  { name: "versus", rows: "versus.mjs" },
  { name: "api", rows: "api.mjs" },
  { name: "discord", rows: "discord.mjs" },
  { name: "dreams", rows: "dreams.mjs" },
  { name: "gateway", rows: "gateway.mjs" },
  { name: "heartbeat", rows: "heartbeat.mjs" },
  { name: "lifecycle", rows: "lifecycle.mjs" },
  { name: "mcp", rows: "mcp.mjs" },
  { name: "reminders", rows: "reminders.mjs" },
  { name: "media", rows: "media.mjs" },
  { name: "usage", rows: "usage.mjs" },
  { name: "workspace", rows: "workspace.mjs" },
  { name: "conversations", rows: "conversations.mjs" },
  { name: "codemode", rows: "codemode.mjs" },
  { name: "people", rows: "people.mjs" },
  { name: "tasks", rows: "tasks.mjs" },
  { name: "memory", report: "memory.mjs", title: "BM25 memory" },
];

const mark = (ok) => (ok ? " ✓" : " ✗");

/** The upload's target, gzip KiB (issue 37). */
const UPLOAD_TARGET_KIB = 900;

/** Upload size rows from `wrangler deploy --dry-run`'s output. */
function sizeRows(dryRunFile) {
  const rows = [];
  const text = fs.readFileSync(dryRunFile, "utf8");
  const m = text.match(/Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/);
  if (m) {
    // Issue 37's target (900 KiB); it replaced issue 23's 700. The row names the
    // std the build has (scripts/build.sh writes it; std from source is 21 KiB smaller).
    const stdFile = path.join(ROOT, "target/hearth-std.txt");
    const std = fs.existsSync(stdFile) ? fs.readFileSync(stdFile, "utf8").trim() : "std not recorded";
    rows.push({ name: `upload gzip (wrangler deploy --dry-run; ${std})`, value: `${m[2]} KiB`, target: `≤ ${UPLOAD_TARGET_KIB} KiB${mark(Number(m[2]) <= UPLOAD_TARGET_KIB)}` });
    rows.push({ name: "upload raw (wrangler deploy --dry-run)", value: `${m[1]} KiB`, target: "" });
  }
  const wasm = fs.statSync(path.join(ROOT, "build/index_bg.wasm")).size;
  rows.push({ name: "build/index_bg.wasm", value: `${(wasm / 1024).toFixed(1)} KiB`, target: "" });
  // The upload by feature, against each feature's budget (bench/size/features.mjs).
  rows.push(...sizeBudgetRows(m ? Number(m[2]) : null));
  return rows;
}

/** The pieces asked for: names on the command line, else `BENCH_ONLY`, else all. */
export function selected(names) {
  if (!names.length) return PIECES;
  const unknown = names.filter((n) => !PIECES.some((p) => p.name === n));
  if (unknown.length) throw new Error(`no bench piece ${unknown.join(", ")}; pieces: ${PIECES.map((p) => p.name).join(", ")}`);
  return PIECES.filter((p) => names.includes(p.name));
}

function table(rows) {
  const w = Math.max(...rows.map((r) => r.name.length), 6);
  const v = Math.max(...rows.map((r) => r.value.length), 5);
  const lines = [`| ${"metric".padEnd(w)} | ${"value".padEnd(v)} | target |`, `|${"-".repeat(w + 2)}|${"-".repeat(v + 2)}|--------|`];
  for (const r of rows) lines.push(`| ${r.name.padEnd(w)} | ${r.value.padEnd(v)} | ${r.target} |`);
  return lines.join("\n");
}

async function main() {
  const args = process.argv.slice(2);
  const dry = args[0] && fs.existsSync(args[0]) ? args.shift() : null;
  const names = args.length ? args : (process.env.BENCH_ONLY || "").split(",").map((s) => s.trim()).filter(Boolean);
  const pieces = selected(names);
  const rows = dry ? sizeRows(dry) : [];
  for (const piece of pieces.filter((p) => p.rows)) {
    process.stderr.write(`[bench] ${piece.name}\n`);
    try {
      const mod = await import(pathToFileURL(path.join(HERE, piece.rows)));
      for (const r of (await mod.bench()) || []) rows.push({ name: r.name, value: String(r.value), target: r.target || "" });
    } catch (e) {
      rows.push({ name: piece.name, value: `failed: ${e.message}`, target: "" });
    }
  }
  if (rows.length) console.log(`\n${table(rows)}`);
  fs.mkdirSync(OUT, { recursive: true });
  fs.writeFileSync(path.join(OUT, "results.json"), JSON.stringify(rows, null, 2));
  let failed = false;
  for (const piece of pieces.filter((p) => p.report)) {
    process.stderr.write(`[bench] ${piece.name}\n`);
    console.log(`\n## ${piece.title || piece.name}`);
    const r = spawnSync(process.execPath, [path.join(HERE, piece.report)], { cwd: ROOT, stdio: "inherit" });
    if (r.status !== 0) {
      console.log(`(${piece.name} failed: exit ${r.status ?? r.signal})`);
      failed = true;
    }
  }
  if (failed) process.exitCode = 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
