// Bench rows for issue 14: the prompt-cache hit rate of a 20-turn
// conversation and of consecutive heartbeats (the LLM stand-in computes
// cache reads the way the providers do: tests/helpers/standins.mjs
// promptCache), the tool definitions a heartbeat sends, and the workerd CPU
// that recording a call's usage adds to a turn (the same turns with the
// ledger off, on, and on with a budget).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OWNER, startHearth, tgUpdate } from "../helpers/hearth.mjs";
import { cpuMeasurable, workerdCpuMeter } from "../helpers/workerd-cpu.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
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
const WINDOW = 150;

/** workerd CPU per plain turn with these settings (user+sys ÷ turns, minus idle). */
async function cpuPerTurn(bindings) {
  const h = await startHearth({ bindings });
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    for (let i = 0; i < WARM; i++) await turn(h, `warm ${i}`);
    await sleep(100);
    const meter = workerdCpuMeter();
    const t0 = performance.now();
    const c0 = meter.read();
    for (let i = 0; i < WINDOW; i++) await turn(h, `bench ${i}`);
    await sleep(100);
    const c1 = meter.read();
    const span = performance.now() - t0;
    const i0 = meter.read();
    await sleep(span);
    const idle = meter.read() - i0;
    return { perTurn: (c1 - c0 - idle) / WINDOW, resolution: meter.resolutionMs / WINDOW };
  } finally {
    await h.close();
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
    const off = await cpuPerTurn({ USAGE_LEDGER: "off" });
    const on = await cpuPerTurn({});
    const budget = await cpuPerTurn({ BUDGET_MONTHLY_USD: "1000" });
    const ms = (x) => `${x.toFixed(2)} ms`;
    const added = on.perTurn - off.perTurn;
    rows.push({
      name: `workerd CPU per plain turn: ledger off / on / on with a budget (${WINDOW} turns each, ±${ms(on.resolution)})`,
      value: `${ms(off.perTurn)} / ${ms(on.perTurn)} / ${ms(budget.perTurn)}`,
    });
    rows.push({
      name: "CPU that recording a call's usage adds to a turn (on − off; one ledger request per drain)",
      value: ms(added),
      target: `≤ 0.2 ms${added <= 0.2 ? " ✓" : " ✗"}`,
    });
    rows.push({ name: "  with a budget (a reservation per call carries the settlement): budget − off", value: ms(budget.perTurn - off.perTurn) });
  }
  return rows;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.table(await bench());
}
