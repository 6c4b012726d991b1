// End to end: heartbeats and jobs that run again within the hour ask the
// LLM for a 1-hour prompt cache, so their later runs read the prompt instead
// of writing it again; a heartbeat every 90 minutes stays on 5 minutes. The
// cron trigger fires at 30-minute steps and the LLM stand-in's cache sees
// the same clock (llm.setTime), so it expires entries as Anthropic would.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { startHearth, systemText } from "./support/hearth.mjs";
import { EXTENDED_CACHE_TTL_BETA } from "./support/llm.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STARTER = path.join(ROOT, "r2-layout/starter");
const ADMIN = "test-admin-token";
const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 12, 9, 0);
// claude-sonnet-4-5's built-in prices, USD per million tokens.
const PRICE = { input: 3, output: 15, read: 0.3, write5m: 3.75, write1h: 6 };

let h;
before(async () => {
  h = await startHearth({
    bindings: {
      AGENTS: "main,slow",
      ADMIN_TOKEN: ADMIN,
      LLM_MODEL: "claude-sonnet-4-5",
      HEARTBEAT_INTERVAL_MINUTES__SLOW: "90",
      USAGE_SETTLE_MS: "0",
    },
  });
  for (const agent of ["main", "slow"]) {
    for (const f of fs.readdirSync(STARTER)) {
      let text = fs.readFileSync(path.join(STARTER, f), "utf8");
      if (f === "HEARTBEAT.md") text += "\n- [ ] Remind me to drink water\n";
      await h.putFile(`agents/${agent}/${f}`, text);
    }
  }
  await h.putFile("agents/main/cron.json", JSON.stringify([{ name: "digest", message: "Summarise my inbox.", cron: "*/30 * * * *" }]));
  h.llm.state.responder = () => ({ text: "HEARTBEAT_OK" });
});
after(() => h.close());

async function schedule(agent) {
  const r = await h.fetch(`/api/agents/${agent}/schedule`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

/** Fires the cron trigger at `t` with the stand-in's cache at the same time, and waits for the runs. */
async function tick(t) {
  h.llm.setTime(t);
  const worker = await h.mf.getWorker();
  await worker.scheduled({ scheduledTime: t, cron: "*/5 * * * *" });
  for (const agent of ["main", "slow"]) {
    await h.until(async () => (await schedule(agent)).lastProcessedTick === t, { what: `${agent} at ${new Date(t).toISOString()}` });
  }
  await h.settle("agent:main:heartbeat", "agent:slow:heartbeat", "agent:main:job:digest");
}

const runsOf = (key) => h.llm.requests.filter((r) => systemText(r).includes(`session=${key} |`));
const prompt = (u) => u.input + u.cacheRead + u.cacheWrite;
const beta = (r) => r.headers["anthropic-beta"];
const costOf = (r) => {
  const u = r.usage;
  const { ephemeral_5m_input_tokens: w5, ephemeral_1h_input_tokens: w1 } = r.cacheCreation;
  assert.equal(w5 + w1, u.cacheWrite, "the split adds up to the writes");
  return (u.input * PRICE.input + u.output * PRICE.output + u.cacheRead * PRICE.read + w5 * PRICE.write5m + w1 * PRICE.write1h) / 1e6;
};

describe("prompt cache lifetime of background runs", () => {
  before(async () => {
    // 09:00 to 12:00 every 30 minutes: seven heartbeats and seven job runs
    // of main, three heartbeats of slow (09:00, 10:30, 12:00).
    for (let t = T0; t <= T0 + 180 * MIN; t += 30 * MIN) await tick(t);
  });

  test("a heartbeat every 30 minutes writes its prompt once for an hour, then reads it", () => {
    const runs = runsOf("agent:main:heartbeat");
    assert.equal(runs.length, 7, runs.map((r) => systemText(r).slice(-80)).join("\n"));
    for (const r of runs) {
      assert.equal(r.invalid, undefined, r.invalid);
      assert.deepEqual(r.body.system.at(-1).cache_control, { type: "ephemeral", ttl: "1h" });
      assert.equal(beta(r), EXTENDED_CACHE_TTL_BETA);
      // The conversation's breakpoint after it: 5 minutes (a longer one may not follow).
      const last = r.body.messages.at(-1).content.at(-1);
      assert.deepEqual(last.cache_control, { type: "ephemeral" });
    }
    const [first, ...later] = runs;
    assert.equal(first.usage.cacheRead, 0);
    assert.ok(first.usage.cacheWrite > 1024, JSON.stringify(first.usage));
    assert.ok(first.cacheCreation.ephemeral_1h_input_tokens > 0.8 * prompt(first.usage), JSON.stringify(first.cacheCreation));
    for (const [i, r] of later.entries()) {
      const share = r.usage.cacheRead / prompt(r.usage);
      assert.ok(share >= 0.8, `run ${i + 2}: read share ${share.toFixed(3)} ${JSON.stringify(r.usage)}`);
      assert.equal(r.cacheCreation.ephemeral_1h_input_tokens, 0, "nothing written for an hour again");
      assert.equal(r.usage.cacheRead, first.cacheCreation.ephemeral_1h_input_tokens, "the whole prompt is read");
    }
  });

  test("a job every 30 minutes does the same", () => {
    const runs = runsOf("agent:main:job:digest");
    assert.equal(runs.length, 7);
    assert.ok(runs.every((r) => r.body.system.at(-1).cache_control.ttl === "1h"));
    for (const r of runs.slice(1)) assert.ok(r.usage.cacheRead / prompt(r.usage) >= 0.8, JSON.stringify(r.usage));
  });

  test("a heartbeat every 90 minutes keeps the 5-minute cache: an hour would not last", () => {
    const runs = runsOf("agent:slow:heartbeat");
    assert.equal(runs.length, 3);
    for (const r of runs) {
      assert.deepEqual(r.body.system.at(-1).cache_control, { type: "ephemeral" });
      assert.equal(beta(r), undefined);
      assert.equal(r.usage.cacheRead, 0, "90 minutes later the 5-minute entry is gone");
      assert.equal(r.cacheCreation.ephemeral_1h_input_tokens, 0);
    }
  });

  test("the ledger keeps the hour's writes apart and prices them at 2x input", async () => {
    for (const [agent, keys] of [["main", ["agent:main:heartbeat", "agent:main:job:digest"]], ["slow", ["agent:slow:heartbeat"]]]) {
      const r = await h.fetch(`/api/agents/${agent}/usage?period=all`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(r.status, 200);
      const report = await r.json();
      const calls = keys.flatMap(runsOf);
      const written1h = calls.reduce((n, c) => n + c.cacheCreation.ephemeral_1h_input_tokens, 0);
      assert.equal(report.cacheWrite1hTokens, written1h, agent);
      assert.equal(report.cacheWriteTokens, calls.reduce((n, c) => n + c.usage.cacheWrite, 0));
      const want = calls.reduce((n, c) => n + costOf(c), 0);
      assert.ok(Math.abs(report.totalCost - want) < 1e-5, `${agent}: ${report.totalCost} vs ${want}`);
      if (agent === "main") {
        assert.ok(report.byKind.heartbeat.cacheWrite1hTokens > 0 && report.byKind.job.cacheWrite1hTokens > 0);
        const heartbeats = runsOf("agent:main:heartbeat");
        assert.equal(report.byKind.heartbeat.cacheReadTokens, heartbeats.reduce((n, c) => n + c.usage.cacheRead, 0));
      }
    }
  });
});

describe("the LLM stand-in refuses what Anthropic refuses in cache_control", () => {
  const send = (body, headers = {}) =>
    fetch(`${h.llm.base}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const msg = (system, content) => ({ model: "claude-sonnet-4-5", max_tokens: 10, system, messages: [{ role: "user", content }] });
  const text = (t, cache_control) => ({ type: "text", text: t, ...(cache_control ? { cache_control } : {}) });

  test("a 1-hour breakpoint after a 5-minute one, and a lifetime that is not 5m or 1h", async () => {
    const order = await send(msg([text("sys", { type: "ephemeral" })], [text("hi", { type: "ephemeral", ttl: "1h" })]));
    assert.equal(order.status, 400);
    const real = JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/real-world/llm/anthropic/error-400-cache-ttl-order.json"), "utf8"));
    const body = await order.json();
    assert.equal(body.type, real.type);
    assert.equal(body.error.type, real.error.type);
    assert.equal(body.error.message, real.error.message.replace("messages.0.content.4", "messages.0.content.0"));
    const seconds = await send(msg([text("sys", { type: "ephemeral", ttl: 3600 })], [text("hi")]));
    assert.equal(seconds.status, 400);
    assert.equal((await seconds.json()).error.message, "system.0.cache_control.ephemeral.ttl: Input should be '5m' or '1h'");
    // An hour first, then 5 minutes: fine.
    const ok = await send(msg([text("sys", { type: "ephemeral", ttl: "1h" })], [text("hi", { type: "ephemeral", ttl: "5m" })]), { "anthropic-beta": EXTENDED_CACHE_TTL_BETA });
    assert.equal(ok.status, 200);
    const usage = (await ok.json()).usage;
    assert.deepEqual(Object.keys(usage.cache_creation).sort(), ["ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens"]);
  });
});
