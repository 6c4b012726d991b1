// Bench rows for issue 14: the prompt-cache hit rate of a 20-turn
// conversation and of a day of heartbeats (the LLM stand-in computes cache
// reads the way the providers do: tests/support/llm-cache.mjs promptCache,
// on the cron trigger's clock), the tool definitions a heartbeat sends, and
// the workerd CPU that recording a call's usage adds to a turn (the same
// turns with the ledger off, on, and on with a budget). Issue 23: what the
// 1-hour cache of background runs saves over a day (built-in prices).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { cpuMeasurable, workerdCpuMeter, workerdPids } from "../tests/support/workerd-cpu.mjs";

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

/** The model whose built-in price the day of heartbeats is costed at. */
const PRICED_MODEL = "claude-sonnet-4-5";
const MIN = 60_000;

/**
 * A day of heartbeats every 30 minutes (48 runs) with the starter
 * workspace: the cron trigger fires every 30 minutes of 12 January 2026 and
 * the stand-in's cache sees the same clock, so a 5-minute entry is gone by
 * the next run and a 1-hour one is not. `bindings`: `LLM_CACHE_TTL=5m` for
 * the day as it was before issue 23. Returns each run's read share, the
 * prompt's writes and reads by lifetime, and the ledger's heartbeat figures.
 */
async function heartbeatDay(bindings = {}) {
  const h = await startHearth({ bindings: { ADMIN_TOKEN: "bench", LLM_MODEL: PRICED_MODEL, USAGE_SETTLE_MS: "0", ...bindings } });
  try {
    await seedStarter(h, "main", "\n- [ ] Remind me to drink water\n");
    h.llm.state.responder = () => ({ text: "HEARTBEAT_OK" });
    const worker = await h.mf.getWorker();
    const runs = [];
    let tools = 0;
    for (let i = 0; i < 48; i++) {
      const t = Date.UTC(2026, 0, 12, 0, 30 * i);
      h.llm.setTime(t);
      const n = h.llm.requests.length;
      await worker.scheduled({ scheduledTime: t, cron: "*/5 * * * *" });
      await h.until(() => h.llm.requests.length > n, { what: `heartbeat ${i}` });
      await h.settle("agent:main:heartbeat");
      const req = h.llm.requests[n];
      runs.push({ share: hit(req.usage), usage: req.usage, written: req.cacheCreation, ttl: req.body.system.at(-1).cache_control.ttl ?? "5m" });
      tools = JSON.stringify(req.body.tools || []).length;
    }
    const r = await h.fetch("/api/agents/main/usage?period=all", { headers: { authorization: "Bearer bench" } });
    const ledger = (await r.json()).byKind.heartbeat;
    // A conversation of the same (main) scope, for its tool definitions.
    h.llm.state.responder = null;
    const n = h.llm.requests.length;
    await turn(h, "hello");
    const conversationTools = JSON.stringify(h.llm.requests[n].body.tools || []).length;
    return { runs, ledger, tools, conversationTools };
  } finally {
    await h.close();
  }
}

/** USD of the prompt's cache writes (by lifetime) and reads over `runs`, at the model's built-in price. */
function cacheCost(runs) {
  const p = { input: 3, read: 0.3, write5m: 3.75, write1h: 6 }; // claude-sonnet-4-5, USD per million tokens
  const sum = (f) => runs.reduce((n, r) => n + f(r), 0);
  return {
    writes1h: (sum((r) => r.written.ephemeral_1h_input_tokens) * p.write1h) / 1e6,
    writes5m: (sum((r) => r.written.ephemeral_5m_input_tokens) * p.write5m) / 1e6,
    reads: (sum((r) => r.usage.cacheRead) * p.read) / 1e6,
  };
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
  const hb = await heartbeatDay();
  const later = hb.runs.slice(1).map((r) => r.share);
  const minLater = Math.min(...later);
  rows.push({
    name: "heartbeat every 30 min: cache read share of its prompt (48 runs of a day, stand-in cache on the trigger's clock)",
    value: `run 1 ${hb.runs[0].share.toFixed(2)} (writes for ${hb.runs[0].ttl}), runs 2–48 min ${minLater.toFixed(3)} (mean ${(later.reduce((a, b) => a + b, 0) / later.length).toFixed(3)})`,
    target: `≥ 0.8${minLater >= 0.8 ? " ✓" : " ✗"}`,
  });
  const before = await heartbeatDay({ LLM_CACHE_TTL: "5m" });
  const usd = (x) => `$${x.toFixed(4)}`;
  const now = cacheCost(hb.runs);
  const then = cacheCost(before.runs);
  rows.push({
    name: `  the prompt's cache over that day, ${PRICED_MODEL} built-in prices: 1-hour writes + reads (5-minute writes of each run's message)`,
    value: `${usd(now.writes1h)} + ${usd(now.reads)} (${usd(now.writes5m)}) = ${usd(now.writes1h + now.reads + now.writes5m)}`,
  });
  rows.push({
    name: "  the same day with LLM_CACHE_TTL=5m (before issue 23: every run writes its prompt)",
    value: `${usd(then.writes5m)} of 5-minute writes + ${usd(then.reads)} reads; read share ${before.runs.slice(1).map((r) => r.share).reduce((a, b) => Math.max(a, b), 0).toFixed(2)} at best`,
  });
  const total = (x) => x.ledger.cost;
  rows.push({
    name: "  heartbeats' whole cost that day in the ledger (input, output, cache), 1 h vs 5 min",
    value: `${usd(total(hb))} vs ${usd(total(before))} (${((1 - total(hb) / total(before)) * 100).toFixed(0)} % less)`,
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
