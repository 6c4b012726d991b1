#!/usr/bin/env node
// Where the first turn after a fresh boot spends its CPU: V8 CPU profiles (through
// Miniflare's inspector) of every isolate in workerd during that turn and during
// the next one, the user Worker's samples split by phase.
//   node bench/perf/cold-profile.mjs <named wasm> <index.js> [runs=5] [--top]
import path from "node:path";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
// `ws` comes with Miniflare (Node 20 has no WebSocket client of its own).
import WebSocket from "ws";
import { startLlm } from "../../tests/support/llm.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";
import { coldMiniflare } from "../../tests/support/cold.mjs";
import { OWNER, SECRET, tgUpdate } from "../../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const [wasmPath, jsPath] = [process.argv[2], process.argv[3]].map((p) => path.resolve(p));
const runs = Number(process.argv[4] || 5);
const showTop = process.argv.includes("--top");
// --all: profile every isolate (Miniflare's R2, entry...). They share workerd's
// thread, so their "(program)" samples overlap the user Worker's work.
const allIsolates = process.argv.includes("--all");
const INTERVAL_US = 100;

// Phase of a user-Worker sample, from the frames on its stack (innermost first).
const PHASES = [
  ["agent object (memory, registry)", /hearth::agent::|Agent as worker::durable|agent_fetch|durable::memory::MemoryHub|hearth_memory::/],
  ["turn: workspace + prompt", /durable::overlay|durable::prompt|durable::skills|WorkspaceCache|r2_layout::workspace/],
  ["turn: llm encode/decode", /durable::llm::/],
  ["turn: reply (telegram client)", /hearth::telegram::client|Channels as durable::ports::Channel/],
  ["turn: other (queue, history, tools)", /durable::session::|durable::tools|session_alarm|Session as worker::durable::DurableObject>::alarm/],
  ["session object: enqueue/status", /session_do::Session|Session as worker::durable::DurableObject>::fetch|session_fetch|SessionStore/],
  ["worker: webhook", /hearth::telegram::|fetch_fetch_glue|hearth::access|hearth::fetch/],
];

function analyse(profile) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const res = { kinds: {}, phases: {}, top: {} };
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample's delta is wall time since the previous one; on a busy machine the
    // thread may have been descheduled in between. Clamping it to twice the
    // interval makes the sums approximate CPU time rather than wall time.
    const dt = Math.min(profile.timeDeltas[i] || 0, 2 * INTERVAL_US) / 1000;
    let n = nodes.get(profile.samples[i]);
    const cf = n.callFrame;
    const kind = cf.url.startsWith("wasm://") ? "wasm" : cf.url ? "js" : ["(idle)", "(program)", "(garbage collector)"].includes(cf.functionName) ? cf.functionName : "builtins";
    res.kinds[kind] = (res.kinds[kind] || 0) + dt;
    if (kind === "(idle)") continue;
    const top = `${kind} ${cf.functionName}`;
    res.top[top] = (res.top[top] || 0) + dt;
    let phase = "other (glue, executor)";
    const frames = [];
    for (let id = n.id; id !== undefined; id = parent.get(id)) frames.push(nodes.get(id).callFrame.functionName);
    outer: for (const f of frames) for (const [name, re] of PHASES) if (re.test(f)) { phase = name; break outer; }
    res.phases[phase] = (res.phases[phase] || 0) + dt;
  }
  return res;
}

async function once() {
  const telegram = await startTelegram();
  const llm = await startLlm();
  const port = 9300 + Math.floor(Math.random() * 500);
  const mf = await coldMiniflare({ js: fs.readFileSync(jsPath, "utf8"), wasm: fs.readFileSync(wasmPath), telegram, llm, inspectorPort: port, });
  await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", "# Soul\nBrief.");
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const conns = [];
  for (const t of targets.filter((t) => allIsolates || t.id.startsWith("core:user"))) {
    const ws = new WebSocket(t.webSocketDebuggerUrl);
    await new Promise((r) => ws.on("open", r));
    let id = 0;
    const pending = new Map();
    ws.on("message", (m) => {
      const msg = JSON.parse(m);
      if (msg.id && pending.has(msg.id)) { pending.get(msg.id)(msg); pending.delete(msg.id); }
    });
    const send = (method, params = {}) => new Promise((r) => { const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params })); });
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: INTERVAL_US });
    conns.push({ name: t.id, ws, send });
  }
  const turn = async (text) => {
    for (const c of conns) await c.send("Profiler.start");
    const before = telegram.sent().length;
    const t0 = performance.now();
    await (await mf.dispatchFetch("http://hearth.test/telegram/main", {
      method: "POST",
      headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: JSON.stringify(tgUpdate({ from: OWNER, text })),
    })).text();
    while (telegram.sent().length <= before) await new Promise((r) => setTimeout(r, 1));
    const wall = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 20));
    const per = {};
    for (const c of conns) per[c.name] = analyse((await c.send("Profiler.stop")).result.profile);
    return { wall, per };
  };
  const first = await turn("hello");
  const second = await turn("again");
  for (const c of conns) c.ws.close();
  await mf.dispose();
  await telegram.close();
  await llm.close();
  return { first, second };
}

const results = [];
for (let i = 0; i < runs; i++) results.push(await once());
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
for (const which of ["first", "second"]) {
  const rs = results.map((r) => r[which]);
  console.log(`\n## ${which} turn (${path.basename(wasmPath)}, ${runs} fresh boots, medians ms): wall ${med(rs.map((r) => r.wall)).toFixed(1)}`);
  const targets = Object.keys(rs[0].per);
  for (const t of targets) {
    const busy = med(rs.map((r) => Object.entries(r.per[t]?.kinds || {}).filter(([k]) => k !== "(idle)").reduce((a, [, v]) => a + v, 0)));
    if (busy < 0.5) continue;
    const kinds = Object.keys(rs[0].per[t].kinds).filter((k) => k !== "(idle)");
    console.log(`  isolate ${t}: busy ${busy.toFixed(1)}  (${kinds.map((k) => `${k} ${med(rs.map((r) => r.per[t].kinds[k] || 0)).toFixed(1)}`).join(", ")})`);
    if (t.startsWith("core:user")) {
      const phases = [...new Set(rs.flatMap((r) => Object.keys(r.per[t].phases)))];
      for (const p of phases.sort()) console.log(`      ${p.padEnd(40)} ${med(rs.map((r) => r.per[t].phases[p] || 0)).toFixed(1)}`);
      if (showTop) {
        const tops = {};
        for (const r of rs) for (const [k, v] of Object.entries(r.per[t].top)) tops[k] = (tops[k] || 0) + v / rs.length;
        for (const [k, v] of Object.entries(tops).sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`        ${v.toFixed(2).padStart(6)} ${k.slice(0, 140)}`);
      }
    }
  }
}
