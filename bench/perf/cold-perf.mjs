#!/usr/bin/env node
// Where workerd's CPU goes in the first turn after a fresh boot, by `perf record
// -e cpu-clock` (CPU time, so a busy machine distorts it less than wall time).
// Needs perf (Linux) and a workerd binary with symbols (the npm one has them).
//   node bench/perf/cold-perf.mjs [runs=5] [wasm:index.js]
// Prints, per category, the median CPU ms of the first and of the second turn.
import fs from "node:fs";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startLlm } from "../../tests/support/llm.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";
import { coldMiniflare } from "../../tests/support/cold.mjs";
import { OWNER, SECRET, tgUpdate } from "../../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const runs = Number(process.argv[2] || 5);
const [wasmPath, jsPath] = (process.argv[3] || `${ROOT}/build/index_bg.wasm:${ROOT}/build/index.js`).split(":");

// First match wins; symbols are workerd's (V8, kj, SQLite) or the kernel's.
const CATEGORIES = [
  ["V8 wasm compile (Liftoff, lazily per function)", /v8::internal::wasm::|Liftoff|Assembler::|SafepointTable|JitPage|ThreadIsolation|jitCodeEvent|CodeBlockInfo|RelocInfo|CompareAndCreateXorPatch|SourcePositionTable|Zone::|ZoneVector|CodeLinePos|LogCode|compiler::/],
  ["V8 JS parse/compile", /Parser|Scanner|BytecodeGenerator|interpreter::|Compiler::Compile|Preparse|Scope::/],
  ["V8 GC", /Heap::|Scavenge|MarkCompact|Sweeper|heap::|GCTracer|Marking/],
  ["V8 JS execution (shim, glue, ICs, runtime)", /^Builtins_|Runtime_|v8::/],
  ["SQLite (Durable Object storage)", /sqlite3|Vdbe|btree|pager|Sqlite/],
  ["workerd, kj, capnp (I/O, RPC, actors)", /kj::|capnp::|workerd::|jsg::|_ZN2kj|_ZN5capnp|_ZN7workerd|ada::/],
  ["malloc, memcpy (libc, tcmalloc)", /tcmalloc|TCMalloc|memcpy|memmove|memset|malloc|free|strlen|__GI/],
];
function categorize(comm, sym, dso) {
  if (comm.startsWith("V8 Default")) return /wasm|compiler|Liftoff|Assembler/.test(sym) ? "V8 background threads: compile (tier-up)" : "V8 background threads: other";
  if (dso.includes("kernel")) return "kernel (page faults, syscalls)";
  for (const [name, re] of CATEGORIES) if (re.test(sym)) return name;
  return dso.startsWith("/tmp/perf-") || dso.includes("JIT") ? "generated code (wasm, JS)" : "other";
}
function report(file) {
  const out = spawnSync("perf", ["script", "-i", file, "-F", "comm,period,ip,sym,dso"], { encoding: "utf8", maxBuffer: 1 << 28 }).stdout;
  const by = {};
  for (const line of out.split("\n")) {
    const m = line.trim().match(/^(.+?)\s+(\d+)\s+[0-9a-f]+\s+(.*)\((.*)\)$/);
    if (!m) continue;
    const k = categorize(m[1].trim(), m[3].trim(), m[4]);
    by[k] = (by[k] || 0) + Number(m[2]) / 1e6;
    by.TOTAL = (by.TOTAL || 0) + Number(m[2]) / 1e6;
  }
  return by;
}

async function once(i) {
  const telegram = await startTelegram();
  const llm = await startLlm();
  const mf = await coldMiniflare({ js: fs.readFileSync(jsPath, "utf8"), wasm: fs.readFileSync(wasmPath), telegram, llm });
  await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", "# Soul\nBrief.");
  const pid = fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).find((d) => {
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]) === process.pid && /workerd/.test(fs.readFileSync(`/proc/${d}/cmdline`, "utf8"));
    } catch { return false; }
  });
  const recorded = async (name, text) => {
    const file = `/tmp/hearth-cold-perf-${process.pid}-${i}-${name}.data`;
    const perf = spawn("perf", ["record", "-q", "-e", "cpu-clock", "-c", "50000", "-p", pid, "-o", file], { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, 300));
    const before = telegram.sent().length;
    await (await mf.dispatchFetch("http://hearth.test/telegram/main", {
      method: "POST",
      headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: JSON.stringify(tgUpdate({ from: OWNER, text })),
    })).text();
    while (telegram.sent().length <= before) await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, 50));
    perf.kill("SIGINT");
    await new Promise((r) => perf.on("exit", r));
    const res = report(file);
    fs.rmSync(file, { force: true });
    return res;
  };
  const first = await recorded("first", "hello");
  const second = await recorded("second", "again");
  await mf.dispose();
  await telegram.close();
  await llm.close();
  return { first, second };
}

const results = [];
for (let i = 0; i < runs; i++) results.push(await once(i));
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const keys = [...new Set(results.flatMap((r) => [...Object.keys(r.first), ...Object.keys(r.second)]))];
const rows = keys.map((k) => [k, med(results.map((r) => r.first[k] || 0)), med(results.map((r) => r.second[k] || 0))]).sort((a, b) => b[1] - a[1]);
console.log(`workerd CPU by category, ms (median of ${runs} fresh boots; perf cpu-clock, 50 µs period): ${path.basename(wasmPath)}`);
console.log("| category | first turn | second turn |\n|---|---|---|");
for (const [k, a, b] of rows) console.log(`| ${k} | ${a.toFixed(1)} | ${b.toFixed(1)} |`);
