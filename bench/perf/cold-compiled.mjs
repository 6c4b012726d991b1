#!/usr/bin/env node
// How much WASM V8 compiles for a turn: the first turn after a fresh boot,
// the next turn, and then the first turn of a new conversation (a friend's DM).
//
//   node bench/perf/cold-compiled.mjs [named wasm] [index.js] [--top N]
//
// Why: the first turn after a boot is mostly V8 compiling, lazily, each WASM
// function the turn calls for the first time (Liftoff; cold-perf.mjs shows the
// compiler's symbols), and its wall time moves by ±15 % between runs on this
// machine. What it compiles does not move: the same build and turn compile the
// same functions every run. So a change on the boot path is measured here in
// functions and bytes, and timed with cold-start.mjs beside its parent.
//
// How: workerd runs with V8's --perf-basic-prof, which appends each code object
// it makes (a WASM function compiled by Liftoff or TurboFan, a JS function) to
// /tmp/perf-<pid>.map; the lines a turn adds are what it compiled. V8 flags
// reach workerd through bench/perf/v8-flags.cjs (this script re-runs itself
// with it). Sizes are the functions' bodies in the WASM (code section), so the
// figure is the WASM the turn made V8 compile; features as in
// bench/size/features.mjs. The named build (target/hearth-named.wasm, which
// scripts/build.sh keeps) gives names; the stripped upload compiles the same.
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FEATURES, readModule } from "../size/features.mjs";
import { startLlm } from "../../tests/support/llm.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";
import { coldMiniflare, postTelegram } from "../../tests/support/cold.mjs";
import { FRIEND, OWNER } from "../../tests/support/hearth.mjs";
import { workerdPids } from "../../tests/support/workerd-cpu.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const FLAG = "--perf-basic-prof";

if (!process.env.HEARTH_V8_FLAGS?.includes(FLAG)) {
  const run = spawnSync(process.execPath, ["--require", path.join(HERE, "v8-flags.cjs"), fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, HEARTH_V8_FLAGS: `${process.env.HEARTH_V8_FLAGS || ""} ${FLAG}`.trim() },
  });
  process.exit(run.status ?? 1);
}

const args = process.argv.slice(2);
const topAt = args.indexOf("--top");
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 0;
const wasmPath = path.resolve(args[0] || path.join(ROOT, "target/hearth-named.wasm"));
const jsPath = path.resolve(args[1] || path.join(ROOT, "build/index.js"));
const wasm = fs.readFileSync(wasmPath);

// A line of the map: `<address> <size> <name>`; V8 names a WASM function
// `<name>-<index>-<tier>` (`JS:` before it on workerd's V8).
const WASM_LINE = /^[0-9a-f]+ ([0-9a-f]+) (?:JS:)?(.*)-(\d+)-(liftoff|turbofan)$/;

const { bodies, names } = readModule(wasm);
const bodySize = new Map(bodies.map((b) => [b.index, b.size]));

/** What a slice of the map's lines compiled: WASM functions (first tier each), bytes, JS functions. */
function compiled(lines) {
  const seen = new Map();
  let js = 0;
  for (const line of lines) {
    const m = line.match(WASM_LINE);
    if (!m) {
      if (line.includes(" JS:")) js++;
      continue;
    }
    const index = Number(m[3]);
    if (m[4] === "liftoff" && !seen.has(index)) seen.set(index, (names.get(index) || m[2]).replace(/\[[0-9a-f]{8,}\]/g, ""));
  }
  const fns = [...seen].map(([index, name]) => ({ name, size: bodySize.get(index) || 0 }));
  return { fns, bytes: fns.reduce((s, f) => s + f.size, 0), js };
}

const telegram = await startTelegram();
const llm = await startLlm();
const before = new Set(workerdPids());
const mf = await coldMiniflare({ js: fs.readFileSync(jsPath, "utf8"), wasm, telegram, llm });
const pids = workerdPids().filter((p) => !before.has(p));
const mapFile = pids.map((p) => `/tmp/perf-${p}.map`).find((f) => fs.existsSync(f));
if (!mapFile) throw new Error(`no /tmp/perf-<pid>.map for workerd ${pids.join(", ")}: did ${FLAG} reach it?`);
await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", "# Soul\nBrief.");

const mapLines = () => fs.readFileSync(mapFile, "utf8").split("\n").filter(Boolean);
const rows = [];
let start = mapLines().length;
const bootFns = compiled(mapLines()).fns.length;
for (const [label, from, text] of [
  ["first turn after a boot (the owner's)", OWNER, "hello"],
  ["the owner's next turn", OWNER, "again"],
  ["a new conversation's first turn (a friend's DM)", FRIEND, "hello there"],
]) {
  const sent = telegram.sent().length;
  await postTelegram(mf, from, text);
  await telegram.untilSent(sent + 1, { timeoutMs: 20000 });
  await new Promise((r) => setTimeout(r, 300)); // the turn's bookkeeping after the reply
  const lines = mapLines();
  rows.push({ label, ...compiled(lines.slice(start)) });
  start = lines.length;
}
await mf.dispose();
await telegram.close();
await llm.close();
fs.rmSync(mapFile, { force: true });

console.log(`WASM compiled by V8 per turn (${path.basename(wasmPath)}, ${(wasm.length / 1000).toFixed(1)} kB; ${bootFns} functions at boot)`);
console.log("| turn | WASM functions | WASM bytes | JS functions |\n|---|---|---|---|");
for (const r of rows) console.log(`| ${r.label} | ${r.fns.length} | ${r.bytes.toLocaleString("en")} | ${r.js} |`);
const first = rows[0];
const by = new Map();
for (const f of first.fns) {
  const feature = FEATURES.find((x) => x.match.some((re) => re.test(f.name))).name;
  const e = by.get(feature) || { n: 0, bytes: 0 };
  e.n++;
  e.bytes += f.size;
  by.set(feature, e);
}
console.log("\nthe first turn's, by feature (bench/size/features.mjs)\n| feature | functions | WASM bytes |\n|---|---|---|");
for (const [k, v] of [...by].sort((a, b) => b[1].bytes - a[1].bytes)) console.log(`| ${k} | ${v.n} | ${v.bytes.toLocaleString("en")} |`);
if (top) {
  console.log(`\nthe first turn's ${top} largest functions`);
  for (const f of [...first.fns].sort((a, b) => b.size - a.size).slice(0, top)) console.log(String(f.size).padStart(7), f.name.replace(/::h[0-9a-f]{16}$/, ""));
}
