// Bench rows for issue 14: the prompt-cache hit rate of a 20-turn
// conversation and of consecutive heartbeats (the LLM stand-in computes
// cache reads the way the providers do: tests/helpers/standins.mjs
// promptCache), the tool definitions a heartbeat sends, and the workerd CPU
// that recording a call's usage adds to a turn (the same turns with the
// ledger off, on, and on with a budget).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OWNER, startHearth, tgUpdate } from "../tests/helpers/hearth.mjs";
import { cpuMeasurable, workerdCpuMeter, workerdPids } from "../tests/helpers/workerd-cpu.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STARTER = path.join(ROOT, "r2-layout/starter");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hit = (u) => u.cacheRead / (u.input + u.cacheRead + u.cacheWrite);

async function seedStarter(h, agent = "main", heartbeatExtra = "") {
  for (const f of fs.readdirSync(STARTER)) {
    let text = fs.readFileSync(path.join(STARTER, f), "utf8");
    if (f === "HEARTBEAT.md") text += heartbeatExtra;
    await h.putFile(`agents/${agent}/${f}`, text);
  }
}

async function turn(h, text) {
  const want = h.telegram.sent().length + 1;
  const res = await h.sendUpdate(tgUpdate({ from: OWNER, text }));
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.telegram.untilSent(want, { timeoutMs: 20000 });
}

/** Hit rate per turn of a 20-turn conversation with the starter workspace. */
async function conversation() {
  const h = await startHearth();
  try {
    await seedStarter(h);
    const rates = [];
    for (let i = 0; i < 20; i++) {
      const n = h.llm.requests.length;
      await turn(h, `Turn ${i}: tell me something short about the number ${i}.`);
      rates.push(hit(h.llm.requests[n].usage));
    }
    return rates;
  } finally {
    await h.close();
  }
}

/** Five heartbeat runs in a row (ticks 30 minutes apart; the stand-in sees them seconds apart). */
async function heartbeats() {
  const h = await startHearth({ bindings: { ADMIN_TOKEN: "bench" } });
  try {
    await seedStarter(h, "main", "\n- [ ] Remind me to drink water\n");
    const worker = await h.mf.getWorker();
    const rates = [];
    let tools = 0;
    for (let i = 0; i < 5; i++) {
      const n = h.llm.requests.length;
      h.llm.push({ text: "HEARTBEAT_OK" });
      await worker.scheduled({ scheduledTime: Date.UTC(2026, 0, 12, 10, 30 * i), cron: "*/5 * * * *" });
      await h.until(() => h.llm.requests.length > n, { what: `heartbeat ${i}` });
      await h.settle("agent:main:heartbeat");
      const req = h.llm.requests[n];
      rates.push(hit(req.usage));
      tools = JSON.stringify(req.body.tools || []).length;
    }
    // A conversation of the same (main) scope, for its tool definitions.
    const n = h.llm.requests.length;
    await turn(h, "hello");
    const conversationTools = JSON.stringify(h.llm.requests[n].body.tools || []).length;
    return { rates, tools, conversationTools };
  } finally {
    await h.close();
  }
}

const WARM = 40;
const TURNS = 200;

/**
 * workerd CPU per plain turn of two configurations, measured side by side:
 * two Miniflares (each its own workerd), turns alternating between them, so
 * both see the same machine load. Returns ms per turn for each.
 */
async function cpuSideBySide(bindingsA, bindingsB) {
  const before = new Set(workerdPids());
  const a = await startHearth({ bindings: bindingsA });
  const pidsA = workerdPids().filter((p) => !before.has(p));
  const b = await startHearth({ bindings: bindingsB });
  const pidsB = workerdPids().filter((p) => !before.has(p) && !pidsA.includes(p));
  try {
    for (const h of [a, b]) {
      await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
      for (let i = 0; i < WARM; i++) await turn(h, `warm ${i}`);
    }
    await sleep(100);
    const [ma, mb] = [workerdCpuMeter(pidsA), workerdCpuMeter(pidsB)];
    const [a0, b0] = [ma.read(), mb.read()];
    for (let i = 0; i < TURNS; i++) {
      await turn(a, `bench ${i}`);
      await turn(b, `bench ${i}`);
    }
    await sleep(100);
    return { a: (ma.read() - a0) / TURNS, b: (mb.read() - b0) / TURNS, resolution: ma.resolutionMs / TURNS };
  } finally {
    await a.close();
    await b.close();
  }
}

export async function bench() {
  const rows = [];
  const conv = await conversation();
  const steady = conv.slice(2);
  const min = Math.min(...steady);
  rows.push({
    name: "cache hit rate, 20-turn conversation, starter workspace (stand-in caches like the providers)",
    value: `turn 1 ${conv[0].toFixed(2)}, turn 2 ${conv[1].toFixed(2)}, turns 3–20 min ${min.toFixed(3)} (mean ${(steady.reduce((a, b) => a + b, 0) / steady.length).toFixed(3)})`,
    target: `≥ 0.9 from turn 3${min >= 0.9 ? " ✓" : " ✗"}`,
  });
  const hb = await heartbeats();
  rows.push({
    name: "cache hit rate, 5 consecutive heartbeat runs (within the cache's 5 minutes)",
    value: hb.rates.map((r) => r.toFixed(2)).join(", "),
  });
  rows.push({
    name: "tool definitions per heartbeat run vs a conversation (main scope, JSON chars / ~tokens)",
    value: `${hb.tools} / ~${Math.round(hb.tools / 4)} vs ${hb.conversationTools} / ~${Math.round(hb.conversationTools / 4)}`,
  });
  if (cpuMeasurable()) {
    const ms = (x) => `${x.toFixed(2)} ms`;
    const on = await cpuSideBySide({ USAGE_LEDGER: "off" }, {});
    const added = on.b - on.a;
    rows.push({
      name: `workerd CPU per plain turn, ledger off vs on (default: calls settled in a batch a minute; ${TURNS} turns each, interleaved, ±${ms(on.resolution)})`,
      value: `${ms(on.a)} vs ${ms(on.b)}`,
    });
    rows.push({ name: "CPU that recording a call's usage adds to a turn (on − off)", value: ms(added), target: `≤ 0.2 ms${added <= 0.2 ? " ✓" : " ✗"}` });
    const every = await cpuSideBySide({ USAGE_LEDGER: "off" }, { USAGE_SETTLE_MS: "0" });
    rows.push({ name: "  settling at the end of every drain instead (USAGE_SETTLE_MS=0): one Agent object call per turn", value: ms(every.b - every.a) });
    const budget = await cpuSideBySide({ USAGE_LEDGER: "off" }, { BUDGET_MONTHLY_USD: "1000" });
    rows.push({ name: "  with a budget (a reservation per LLM call, carrying the settlements)", value: ms(budget.b - budget.a) });
  }
  return rows;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.table(await bench());
}
