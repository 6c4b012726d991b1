#!/usr/bin/env node
// First turn after a fresh boot, next to warm turns, in Miniflare with instant
// stand-ins: wall time (webhook POST → reply at the Telegram stand-in) and the
// CPU time workerd spent (all its threads, from /proc/<pid>/task/*/schedstat).
//
//   node bench/perf/cold-start.mjs [runs=10] [wasm[:index.js] ...]
//
// With several builds, the runs alternate between them (A B A B ...), so a busy
// machine slows each alike. Without one, build/index_bg.wasm + build/index.js;
// `floor` is the JS I/O floor worker (bench/floor/worker.mjs).
// Per run, a new Miniflare: boot (new → ready), then
//   first   the owner's first turn (cold isolate, cold Session and Agent objects)
//   second  the owner's next turn (all warm)
//   other   a first turn in another chat (new Session object, warm isolate)
// Options (environment): PHASES=1 prints when the webhook answered, the typing
// action, the LLM request and the reply arrived; THREADS=1 splits the CPU by
// workerd thread (event loop vs V8's background compile/GC threads); WARM_CODE=1
// runs a friend's turn before the owner's first one; WARM_R2=1 runs R2 list/get
// through Miniflare's simulator before the first turn.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLlm } from "../../tests/support/llm.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";
import { coldMiniflare, FLOOR, postTelegram } from "../../tests/support/cold.mjs";
import { FRIEND, OWNER } from "../../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const runs = Number(process.argv[2] || 10);
// `floor` as a build: the JS I/O floor worker (bench/floor/worker.mjs).
const builds = (process.argv.length > 3 ? process.argv.slice(3) : [path.join(ROOT, "build/index_bg.wasm")]).map((spec) => {
  if (spec === FLOOR) return { name: "JS I/O floor", floor: true, rows: [] };
  const [wasm, js = path.join(ROOT, "build/index.js")] = spec.split(":");
  return { name: path.basename(wasm), wasm: fs.readFileSync(wasm), js: fs.readFileSync(js, "utf8"), rows: [] };
});

let LLM;
function workerdPids() {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && /workerd/.test(fs.readFileSync(`/proc/${d}/cmdline`, "utf8"))) out.push(d);
    } catch {}
  }
  return out;
}
// CPU ms per thread name (the first thread is workerd's event loop, where all
// isolates run; V8's background compile and GC threads have their own names).
function cpuByThread(pids) {
  const by = {};
  for (const pid of pids) {
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const ns = Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
        const name = t === pid ? "main" : fs.readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim().replace(/[0-9]+$/, "#");
        by[name] = (by[name] || 0) + ns / 1e6;
      } catch {}
    }
  }
  return by;
}
const cpuMs = (pids) => Object.values(cpuByThread(pids)).reduce((a, b) => a + b, 0);
const diff = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - (a[k] || 0)]));

async function boot(build, telegram, llm) {
  return coldMiniflare({ js: build.js, wasm: build.wasm, floor: build.floor, telegram, llm });
}

async function turn(mf, telegram, pids, from, text, llm = LLM) {
  // The stand-ins stamp each request; the phases below are read from them.
  const before = telegram.sent().length;
  const c0 = cpuMs(pids);
  const th0 = cpuByThread(pids);
  const w0 = Date.now();
  const t0 = performance.now();
  await postTelegram(mf, from, text);
  const ack = performance.now() - t0;
  const deadline = Date.now() + 20000;
  while (telegram.sent().length <= before) {
    if (Date.now() > deadline) throw new Error("no reply");
    await new Promise((r) => setTimeout(r, 1));
  }
  const wall = performance.now() - t0;
  // Let the tail of the turn (registry touch, usage writes) finish before reading CPU.
  await new Promise((r) => setTimeout(r, 30));
  const typing = telegram.calls("sendChatAction").filter((r) => r.at >= w0)[0];
  const llmReq = llm.requests.filter((r) => r.start >= w0)[0];
  return { ack, wall, typing: typing ? typing.at - w0 : NaN, llmAt: llmReq ? llmReq.start - w0 : NaN, reply: telegram.sent()[before].at - w0, cpu: cpuMs(pids) - c0, threads: diff(th0, cpuByThread(pids)) };
}

const telegram = await startTelegram();
const llm = await startLlm();
LLM = llm;
for (let i = 0; i < runs; i++) {
  for (const b of builds) {
    const t0 = performance.now();
    const mf = await boot(b, telegram, llm);
    const bootMs = performance.now() - t0;
    const pids = workerdPids();
    try {
      const bucket = await mf.getR2Bucket("BUCKET");
      await bucket.put("agents/main/SOUL.md", "# Soul\nBrief.");
      // WARM_R2=1: run list/get/head once through Miniflare's R2 simulator (its own
      // worker, cold too) so its warm-up is not counted in Hearth's first turn.
      if (process.env.WARM_R2) {
        await bucket.list({ prefix: "agents/main/" });
        await bucket.list({ prefix: "skills/", delimiter: "/" });
        await (await bucket.get("agents/main/SOUL.md"))?.text();
        await bucket.head("agents/main/NOPE.md");
      }
      // WARM_CODE=1: a friend's turn first (warms the isolate's code and the Agent
      // object), so the owner's "first" turn is cold only in its Session object.
      const pre = process.env.WARM_CODE ? await turn(mf, telegram, pids, FRIEND, "warm the code") : null;
      const first = await turn(mf, telegram, pids, OWNER, "hello");
      const second = await turn(mf, telegram, pids, OWNER, "again");
      const other = await turn(mf, telegram, pids, FRIEND, "a new chat");
      b.rows.push({ boot: bootMs, first, second, other, pre });
    } finally {
      await mf.dispose();
    }
  }
}
await telegram.close();
await llm.close();

const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log(`${runs} fresh boots per build, medians in ms (wall: webhook POST → reply received; cpu: workerd, all threads)`);
console.log("| build | boot | first wall | first cpu | first ack | second wall | second cpu | other-chat first wall | other cpu |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const b of builds) {
  const m = (f) => med(b.rows.map(f)).toFixed(1);
  if (process.env.PHASES) {
    for (const k of ["first", "second", "other"]) {
      console.error(`${b.name} ${k}: webhook answered ${m((r) => r[k].ack)}, typing sent ${m((r) => r[k].typing)}, LLM request ${m((r) => r[k].llmAt)}, reply sent ${m((r) => r[k].reply)} (ms after the POST)`);
    }
  }
  if (process.env.THREADS) {
    for (const k of ["pre", "first", "second", "other"].filter((k) => b.rows[0][k])) {
      const names = [...new Set(b.rows.flatMap((r) => Object.keys(r[k].threads)))];
      console.error(`${b.name} ${k} cpu by thread: ` + names.map((n) => `${n} ${m((r) => r[k].threads[n] || 0)}`).filter((x) => !x.endsWith(" 0.0")).join(", "));
    }
  }
  console.log(`| ${b.name} | ${m((r) => r.boot)} | ${m((r) => r.first.wall)} | ${m((r) => r.first.cpu)} | ${m((r) => r.first.ack)} | ${m((r) => r.second.wall)} | ${m((r) => r.second.cpu)} | ${m((r) => r.other.wall)} | ${m((r) => r.other.cpu)} |`);
}
