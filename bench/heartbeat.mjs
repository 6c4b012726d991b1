// Bench piece: tokens per heartbeat run for the starter workspace
// (r2-layout/starter), measured in workerd against the LLM stand-in, and
// the R2 operations of an idle tick (HEARTBEAT.md unchanged, nothing due).
//
// `heartbeatTokens()` returns the figures; `bench()` returns rows for
// `npm run bench`. Tokens are estimated from the request the stand-in
// received (characters / 4 of the system prompt, messages and tool
// definitions), the stand-in's own count; how much of it the prompt cache
// serves is in bench/usage.mjs.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startHearth } from "../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STARTER = path.join(ROOT, "r2-layout/starter");
const OPEN_ITEM = "\n- [ ] Remind me to drink water between 10:00 and 18:00\n";

async function seedStarter(h, extraHeartbeat = "") {
  for (const f of fs.readdirSync(STARTER)) {
    let text = fs.readFileSync(path.join(STARTER, f), "utf8");
    if (f === "HEARTBEAT.md") text += extraHeartbeat;
    await h.putFile(`agents/main/${f}`, text);
  }
}

function estimate(req) {
  const b = req.body;
  const system = (b.system || []).map((s) => s.text).join("\n");
  const messages = JSON.stringify(b.messages || []);
  const tools = JSON.stringify(b.tools || []);
  const chars = system.length + messages.length + tools.length;
  return { systemChars: system.length, messageChars: messages.length, toolChars: tools.length, chars, estInputTokens: Math.round(chars / 4) };
}

/** One heartbeat tick at a fixed time, for the starter workspace as shipped and with one open item. */
export async function heartbeatTokens() {
  const h = await startHearth({ bindings: { ADMIN_TOKEN: "bench" } });
  try {
    const worker = await h.mf.getWorker();
    const waitTick = async (t) => {
      await worker.scheduled({ scheduledTime: t, cron: "*/5 * * * *" });
      await h.until(async () => {
        const r = await h.fetch("/api/agents/main/schedule", { headers: { authorization: "Bearer bench" } });
        const s = await r.json();
        return s.pendingTick === null && s.lastProcessedTick === t ? s : null;
      }, { what: "tick processed" });
    };
    const status = async () => (await h.fetch("/api/agents/main/schedule", { headers: { authorization: "Bearer bench" } })).json();
    // As shipped: HEARTBEAT.md has no open item, so no LLM call at all.
    await seedStarter(h);
    await waitTick(Date.UTC(2026, 0, 12, 10, 0));
    await new Promise((r) => setTimeout(r, 200));
    const shippedCalls = h.llm.requests.length;
    const firstTickOps = (await status()).lastTickR2Ops;
    // Idle ticks in the same (skipped) slot: HEARTBEAT.md is unchanged.
    const idleOps = [];
    for (const m of [5, 10, 15]) {
      await waitTick(Date.UTC(2026, 0, 12, 10, m));
      idleOps.push((await status()).lastTickR2Ops);
    }
    // With one open item: one run.
    await seedStarter(h, OPEN_ITEM);
    h.llm.push({ text: "HEARTBEAT_OK" });
    await waitTick(Date.UTC(2026, 0, 12, 10, 30));
    await h.until(() => h.llm.requests.length > shippedCalls, { what: "heartbeat LLM call" });
    const req = h.llm.requests[h.llm.requests.length - 1];
    return {
      shippedCalls,
      firstTickOps,
      idleOps,
      runCalls: h.llm.requests.length - shippedCalls,
      ...estimate(req),
      estOutputTokens: Math.ceil("HEARTBEAT_OK".length / 4),
    };
  } finally {
    await h.close();
  }
}

export async function bench() {
  const t = await heartbeatTokens();
  const perRun = t.estInputTokens + t.estOutputTokens;
  return [
    { name: "heartbeat, starter workspace as shipped (no open item)", value: `${t.shippedCalls} LLM calls, 0 tokens` },
    {
      name: "heartbeat run, starter workspace + 1 open item (est. chars/4)",
      value: `~${perRun} tokens (input ~${t.estInputTokens}: system ${t.systemChars} + messages ${t.messageChars} + tools ${t.toolChars} chars; output ~${t.estOutputTokens})`,
    },
    { name: "heartbeat tokens per day at 30 min, always active", value: `~${perRun * 48}` },
    {
      name: "R2 ops per idle tick (HEARTBEAT.md unchanged: 1 head + cron.json)",
      value: `${t.idleOps.join(", ")} (first tick, resolving the overlay: ${t.firstTickOps})`,
    },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await heartbeatTokens());
  console.table(await bench());
}
