// End to end: the cron trigger → Agent objects → heartbeat and job sessions →
// LLM stand-in → the owner on Telegram, at fixed trigger times in workerd.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "test-admin-token";
const CRON = "*/5 * * * *";
const MIN = 60_000;
const utc = (y, mo, d, h, mi = 0) => Date.UTC(y, mo - 1, d, h, mi);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let h;
before(async () => {
  h = await startHearth({
    bindings: {
      AGENTS: "main,jobs",
      ADMIN_TOKEN: ADMIN,
      TIMEZONE: "Europe/Paris",
      HEARTBEAT_ACTIVE_HOURS: "08:00-22:00",
      // main inherits from a template (with nothing in it until a test puts HEARTBEAT.md there).
      TEMPLATE__MAIN: "concierge",
    },
  });
  await h.putFile("agents/main/SOUL.md", "# Soul\nI am Ember, warm and brief.");
  await h.putFile("agents/main/MEMORY.md", "- Olga's cat is Miso. PRIVATE-MEMORY-FACT");
  await h.putFile("agents/main/HEARTBEAT.md", "## Periodic Tasks\n- [ ] Check the calendar for changes HB-ITEM\n- [x] Done thing\n");
  // Shadowed by main's own HEARTBEAT.md until the overlay test deletes that.
  await h.putFile("_catalog/concierge/workspace/HEARTBEAT.md", "- [ ] Look at the weather TEMPLATE-HB-ITEM\n");
  await h.putFile("agents/jobs/SOUL.md", "# Soul\nI am the jobs agent.");
  await h.putFile("agents/jobs/MEMORY.md", "JOBS-PRIVATE-MEMORY");
});
after(() => h.close());
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);

async function schedule(agent) {
  const r = await h.fetch(`/api/agents/${agent}/schedule`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

async function sessionStatus(key) {
  const ns = await h.mf.getDurableObjectNamespace("SESSION");
  const r = await ns.get(ns.idFromName(key)).fetch("https://session/status");
  return r.json();
}

/** Fires the cron trigger at `t` (ms) and waits until both agents handled it. */
async function tick(...times) {
  const worker = await h.mf.getWorker();
  await Promise.all(times.map((t) => worker.scheduled({ scheduledTime: t, cron: CRON })));
  for (const agent of ["main", "jobs"]) {
    await h.until(
      async () => {
        const s = await schedule(agent);
        return s.pendingTick === null && times.includes(s.lastProcessedTick);
      },
      { what: `${agent} processed tick ${new Date(times[0]).toISOString()}` },
    );
  }
}

/** Waits until a session has no open message. */
async function idle(key) {
  await h.until(async () => (await sessionStatus(key)).open === 0, { what: `${key} idle` });
}

const HB = "agent:main:heartbeat";
const hbRequests = () => h.llm.requests.filter((r) => JSON.stringify(r.body.messages).includes("[Heartbeat "));

describe("heartbeat", () => {
  test("a reply of HEARTBEAT_OK sends nothing; the run sees the workspace and one message", async () => {
    h.llm.push({ text: "HEARTBEAT_OK" });
    await tick(utc(2026, 1, 12, 9, 0)); // 10:00 in Paris
    await h.until(() => h.llm.requests.length === 1, { what: "heartbeat LLM call" });
    await idle(HB);
    await sleep(100);
    assert.equal(h.telegram.sent().length, 0, "nothing sent to anyone");
    const req = h.llm.requests[0];
    const system = systemText(req);
    assert.match(system, /HB-ITEM/, "HEARTBEAT.md in the prompt");
    assert.match(system, /PRIVATE-MEMORY-FACT/, "main scope sees MEMORY.md");
    assert.match(system, /session=agent:main:heartbeat/);
    assert.equal(req.body.messages.length, 1);
    assert.match(JSON.stringify(req.body.messages[0]), /HEARTBEAT_OK/);
    const s = await schedule("main");
    assert.equal(s.heartbeat.last.outcome, "queued");
    assert.equal(s.heartbeat.lastSlot, utc(2026, 1, 12, 9, 0));
    assert.equal(s.heartbeat.nextSlot, utc(2026, 1, 12, 9, 30));
    // The run's tokens, as the LLM stand-in reported them, in the agent's ledger.
    const u = req.usage;
    assert.deepEqual(s.tokens.heartbeat, { runs: 1, ...u, totalTokens: u.input + u.output + u.cacheRead + u.cacheWrite });
    assert.deepEqual(s.tokens.jobs.runs, 0);
  });

  test("a reply with content reaches the owner once; the same text again is held back", async () => {
    h.llm.push({ text: "Your 11:00 meeting moved to 14:00." });
    await tick(utc(2026, 1, 12, 9, 30));
    await h.until(() => sentTo(OWNER).length === 1, { what: "notification" });
    assert.equal(sentTo(OWNER)[0].body.text, "Your 11:00 meeting moved to 14:00.");
    assert.equal(h.llm.requests[0].body.messages.length, 1, "the previous run's history is not carried");
    await idle(HB);
    h.llm.push({ text: "Your 11:00 meeting moved to 14:00." });
    await tick(utc(2026, 1, 12, 10, 0));
    await h.until(() => h.llm.requests.length === 2, { what: "second heartbeat" });
    await idle(HB);
    await sleep(150);
    assert.equal(h.telegram.sent().length, 1, "duplicate notification suppressed");
  });

  test("an empty HEARTBEAT.md makes no LLM request", async () => {
    await h.putFile("agents/main/HEARTBEAT.md", "# Heartbeat\n\n<!-- Add tasks below. -->\n- [ ]\n");
    await tick(utc(2026, 1, 12, 10, 30));
    const s = await schedule("main");
    assert.equal(s.heartbeat.last.outcome, "skipped: empty");
    await sleep(150);
    assert.equal(h.llm.requests.length, 0);
  });

  test("outside active hours nothing runs", async () => {
    await h.putFile("agents/main/HEARTBEAT.md", "- [ ] Check the calendar HB-ITEM\n");
    await tick(utc(2026, 1, 12, 21, 30)); // 22:30 in Paris
    assert.equal((await schedule("main")).heartbeat.last.outcome, "inactive");
    await sleep(150);
    assert.equal(h.llm.requests.length, 0);
  });

  test("two triggers for one slot run it once", async () => {
    h.llm.push({ text: "HEARTBEAT_OK" });
    const t = utc(2026, 1, 13, 9, 0);
    await tick(t, t, t + 3 * MIN, t);
    await h.until(() => h.llm.requests.length >= 1, { what: "heartbeat" });
    await idle(HB);
    await tick(t + 3 * MIN); // a redelivered trigger, later
    await sleep(200);
    assert.equal(h.llm.requests.length, 1);
  });

  test("a heartbeat session still mid-turn skips the next slot", async () => {
    h.llm.push({ text: "HEARTBEAT_OK", delayMs: 1500 });
    await tick(utc(2026, 1, 13, 9, 30));
    await h.until(() => h.llm.requests.length === 1, { what: "slow heartbeat" });
    await tick(utc(2026, 1, 13, 10, 0));
    assert.equal((await schedule("main")).heartbeat.last.outcome, "busy");
    await idle(HB);
    await sleep(100);
    assert.equal(h.llm.requests.length, 1);
  });

  test("a HEARTBEAT.md of prose without a checkbox makes no LLM request; an idle tick costs two R2 reads", async () => {
    await h.putFile("agents/main/HEARTBEAT.md", "# Heartbeat\n\nCheck my inbox and tell me about anything urgent.\n");
    await tick(utc(2026, 1, 13, 10, 30));
    assert.equal((await schedule("main")).heartbeat.last.outcome, "skipped: no_open_item");
    await tick(utc(2026, 1, 13, 10, 35));
    const s = await schedule("main");
    assert.equal(s.heartbeat.last.outcome, "skipped: no_open_item");
    assert.equal(s.lastTickR2Ops, 2, "unchanged HEARTBEAT.md: one head, plus cron.json");
    await sleep(150);
    assert.equal(h.llm.requests.length, 0);
  });

  test("HEARTBEAT.md resolves through the overlay: the template's file runs when the agent has none", async () => {
    const bucket = await h.bucket();
    await bucket.delete("agents/main/HEARTBEAT.md");
    try {
      h.llm.push({ text: "HEARTBEAT_OK" });
      await tick(utc(2026, 1, 13, 11, 0));
      await h.until(() => hbRequests().length === 1, { what: "heartbeat from the template's HEARTBEAT.md" });
      assert.match(systemText(hbRequests()[0]), /TEMPLATE-HB-ITEM/, "the prompt shows the same file");
      await idle(HB);
      // The agent's own (empty) file wins over the template.
      await h.putFile("agents/main/HEARTBEAT.md", "# Heartbeat\n");
      await tick(utc(2026, 1, 13, 11, 30));
      assert.equal((await schedule("main")).heartbeat.last.outcome, "skipped: empty");
      await sleep(150);
      assert.equal(h.llm.requests.length, 1);
    } finally {
      // Later tests (and the jobs agent's) must not inherit a heartbeat.
      await bucket.delete("_catalog/concierge/workspace/HEARTBEAT.md");
    }
  });

  test("heartbeat tokens are counted apart from conversation tokens", async () => {
    const before = (await schedule("main")).tokens.heartbeat;
    assert.ok(before.runs >= 5 && before.input >= 4 * before.runs && before.totalTokens > before.input, JSON.stringify(before));
    await h.sendUpdate(tgUpdate({ text: "hello" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "conversation reply" });
    const afterChat = (await schedule("main")).tokens.heartbeat;
    assert.deepEqual(afterChat, before);
    await (await h.bucket()).delete("agents/main/HEARTBEAT.md");
  });
});

describe("cron.json jobs", () => {
  const CRON_JSON = JSON.stringify([
    { name: "morning", message: "Brief me on today JOB-MSG", cron: "0 8 * * *", timezone: "Europe/Paris" },
    { name: "broken", message: "never", cron: "at eight" },
  ]);
  const JOB = "agent:jobs:job:morning";
  const req0 = () => jobRequests()[0];
  const jobRequests = () => h.llm.requests.filter((r) => r.raw.includes("JOB-MSG"));

  // [day, expected UTC hour]: Paris is UTC+1 in winter, UTC+2 in summer
  // (clocks go forward on 29 March 2026 and back on 25 October 2026).
  const days = [
    [[2026, 3, 28], 7],
    [[2026, 3, 30], 6],
    [[2026, 10, 24], 6],
    [[2026, 10, 26], 7],
  ];

  before(async () => {
    await h.putFile("agents/jobs/cron.json", CRON_JSON);
  });

  for (const [[y, mo, d], hour] of days) {
    test(`a 08:00 Europe/Paris job fires once at ${String(hour).padStart(2, "0")}:00 UTC on ${y}-${mo}-${d}`, async () => {
      // Catch up what was missed since the last tick (one run at most), then count.
      const start = utc(y, mo, d, 5, 0);
      h.llm.push({ text: `Catch-up for the day before ${y}-${mo}-${d}` });
      await tick(start - 5 * MIN);
      await sleep(100);
      await idle(JOB);
      await h.until(() => jobRequests().length <= 1 && h.telegram.sent().length === jobRequests().length, { what: "catch-up settled" });
      assert.ok(jobRequests().length <= 1, "a missed slot runs once");
      h.reset();
      h.llm.push({ text: `Briefing for ${y}-${mo}-${d}: all clear.` });
      for (let t = start; t <= utc(y, mo, d, 8, 0); t += 5 * MIN) {
        await tick(t);
        if (t === utc(y, mo, d, hour, 0)) {
          await h.until(() => jobRequests().length === 1, { what: "job LLM call at its tick" });
        } else if (t < utc(y, mo, d, hour, 0)) {
          assert.equal(jobRequests().length, 0, `no run before the slot (tick ${new Date(t).toISOString()})`);
        }
      }
      await idle(JOB);
      await h.until(() => sentTo(OWNER).length === 1, { what: "job output to the owner" });
      await sleep(100);
      assert.equal(jobRequests().length, 1);
      assert.equal(h.llm.requests.length, 1, "no other LLM work");
      assert.equal(sentTo(OWNER).length, 1);
      assert.equal(sentTo(OWNER)[0].body.text, `Briefing for ${y}-${mo}-${d}: all clear.`);
      assert.match(req0().raw, /JOB-MSG/);
      const req = req0();
      assert.match(systemText(req), /session=agent:jobs:job:morning/);
      assert.ok(!req.raw.includes("JOBS-PRIVATE-MEMORY"), "an isolated job does not see MEMORY.md");
      const s = await schedule("jobs");
      const job = s.jobs.find((j) => j.name === "morning");
      assert.equal(job.lastSlot, utc(y, mo, d, hour, 0));
      assert.ok(job.nextRun > utc(y, mo, d, 8, 0));
      assert.ok(s.errors.some((e) => e.includes("broken")), JSON.stringify(s.errors));
      assert.ok(s.tokens.jobs.input > 0 && s.tokens.byJob.morning.runs >= 1, JSON.stringify(s.tokens));
      const u = req.usage;
      assert.ok(s.tokens.byJob.morning.totalTokens >= u.input + u.output + u.cacheRead + u.cacheWrite, JSON.stringify(s.tokens));
    });
  }

  test("the admin route needs the bearer token", async () => {
    assert.equal((await h.fetch("/api/agents/jobs/schedule")).status, 401);
    const r = await h.fetch("/api/agents/nobody/schedule", { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 404);
  });
});
