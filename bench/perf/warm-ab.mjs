#!/usr/bin/env node
// Paired A/B of the warm plain turn's workerd CPU: two Hearth builds, each in
// its own workerd (Miniflare, the defaults users get), the same instant LLM and
// Telegram stand-ins, windows taken in turn (A, B, A, B…) so a busier moment of
// the shared machine weighs on both. CPU is every thread of the build's own
// workerd (schedstat) minus what it burns idle, per turn, as `bench/versus.mjs`
// measures its warm rows.
//
//   node bench/perf/warm-ab.mjs <dir A> <dir B> [--windows 12] [--window 10] [--warmup 20]
// (each dir holds index.js and index_bg.wasm, e.g. a copy of build/).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { coldMiniflare } from "../../tests/support/cold.mjs";
import { OWNER, SECRET, tgUpdate } from "../../tests/support/hearth.mjs";
import { startLlm } from "../../tests/support/llm.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";
import { percentile } from "../../tests/support/stats.mjs";
import { idleRate, workerdMainThreadMeter, workerdPids, workerdSchedMeter } from "../../tests/support/workerd-cpu.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(args[i + 1]);
};
const dirs = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
if (dirs.length !== 2) throw new Error("usage: warm-ab.mjs <dir A> <dir B> [--windows N] [--window N] [--warmup N]");
const WINDOWS = opt("windows", 12);
const WINDOW = opt("window", 10);
const WARMUP = opt("warmup", 20);
const TAIL_MS = 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);

let bots = 0;
async function boot(dir, telegram, llm) {
  const before = new Set(workerdPids());
  const mf = await coldMiniflare({
    js: fs.readFileSync(path.join(dir, "index.js"), "utf8"),
    wasm: fs.readFileSync(path.join(dir, "index_bg.wasm")),
    telegram,
    llm,
    allow: [],
    defaults: true,
  });
  await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", "# Soul\nBrief.");
  const pids = workerdPids().filter((p) => !before.has(p));
  const bot = { next: 1_000_000 * ++bots };
  const send = async (text) => {
    const want = telegram.sent().length + 1;
    const res = await mf.dispatchFetch("http://hearth.test/telegram/main", {
      method: "POST",
      headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: JSON.stringify({ ...tgUpdate({ from: OWNER, text }), update_id: bot.next++ }),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    await telegram.untilSent(want, { timeoutMs: 20000 });
  };
  return { name: dir, mf, send, meter: workerdSchedMeter(pids), main: workerdMainThreadMeter(pids) };
}

const telegram = await startTelegram();
const llm = await startLlm();
const load0 = os.loadavg()[0];
const systems = [];
try {
  for (const d of dirs) systems.push(await boot(d, telegram, llm));
  for (const s of systems) [s.idle, s.mainIdle] = await idleRate(s);
  for (let i = 0; i < WARMUP; i++) for (const s of systems) await s.send(`plain ${i}`);
  for (const s of systems) Object.assign(s, { cpu: [], mainCpu: [] });
  const diffs = [];
  for (let w = 0; w < WINDOWS; w++) {
    // Alternate which goes first, so neither always follows the other.
    const order = w % 2 ? [...systems].reverse() : systems;
    for (const s of order) {
      await sleep(TAIL_MS);
      const c0 = s.meter.read();
      const m0 = s.main.read();
      const t0 = performance.now();
      for (let i = 0; i < WINDOW; i++) await s.send(`warm ${w}.${i}`);
      await sleep(TAIL_MS);
      const span = performance.now() - t0;
      s.cpu.push((s.meter.read() - c0 - s.idle * span) / WINDOW);
      s.mainCpu.push((s.main.read() - m0 - s.mainIdle * span) / WINDOW);
    }
    diffs.push(systems[1].cpu.at(-1) - systems[0].cpu.at(-1));
  }
  const ms = (x) => `${x.toFixed(2)} ms`;
  console.log(`load ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}; ${WINDOWS} windows of ${WINDOW} turns each, after ${WARMUP} warm-up turns (history ~${2 * WARMUP}→${2 * (WARMUP + WINDOWS * WINDOW)})`);
  for (const s of systems) {
    const sorted = [...s.cpu].sort((a, b) => a - b);
    console.log(`${s.name}: CPU per turn median ${ms(median(s.cpu))} (min ${ms(sorted[0])}, max ${ms(sorted.at(-1))}); main thread ${ms(median(s.mainCpu))}`);
  }
  const sd = [...diffs].sort((a, b) => a - b);
  console.log(`B − A per window: median ${ms(median(diffs))} (quartiles ${ms(percentile(sd, 25))} … ${ms(percentile(sd, 75))}); ratio of medians ${(median(systems[1].cpu) / median(systems[0].cpu)).toFixed(3)}`);
  console.log(`windows A: ${systems[0].cpu.map((x) => x.toFixed(1)).join(" ")}`);
  console.log(`windows B: ${systems[1].cpu.map((x) => x.toFixed(1)).join(" ")}`);
} finally {
  for (const s of systems) await s.mf.dispose();
  await telegram.close();
  await llm.close();
}
