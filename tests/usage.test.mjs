// End to end: what the agent costs and the limits on it (issue 14), in
// workerd. The LLM stand-in reports usage the way the providers do (prompt
// cache reads and writes of the request's prefix) unless a test scripts it;
// the ledger in each agent's Agent object prices it with LLM_PRICES.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "usage-admin-token";
const auth = { headers: { authorization: `Bearer ${ADMIN}` } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// claude-test's prices here (USD per million tokens).
const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const costOf = (u) => (u.input * PRICE.input + u.output * PRICE.output + u.cacheRead * PRICE.cacheRead + u.cacheWrite * PRICE.cacheWrite) / 1e6;
const round6 = (x) => Math.round(x * 1e6) / 1e6;
// Users the "shared" agent answers, for the concurrency test.
const PEERS = [FRIEND, 778, 779, 780];

let h;
before(async () => {
  h = await startHearth({
    persist: fs.mkdtempSync(path.join(os.tmpdir(), "hearth-usage-")),
    bindings: {
      AGENTS: "main,mystery,foot,tight,shared,bg,batch",
      ADMIN_TOKEN: ADMIN,
      // Each drain settles at once, so the ledger is current when a test reads it;
      // "batch" keeps the default way (calls wait in their session, then go together).
      USAGE_SETTLE_MS: "0",
      USAGE_SETTLE_MS__BATCH: "1500",
      TIMEZONE: "Europe/Paris",
      LLM_PRICES: JSON.stringify({ "claude-test": PRICE }),
      LLM_MODEL__MYSTERY: "mystery-model",
      USAGE_FOOTER__FOOT: "true",
      BUDGET_DAILY_USD__TIGHT: "1",
      BUDGET_DAILY_USD__SHARED: "1",
      ALLOW_FROM__SHARED: PEERS.map((p) => `telegram:${p}`).join(","),
      BUDGET_DAILY_USD__BG: "1",
    },
  });
});
after(() => h.close());
beforeEach(() => h.reset());

const sentTo = (chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);

/** A Telegram message to `agent` from `from`; resolves with the next message sent to that chat. */
async function say(agent, text, { from = OWNER, script = [], replies = 1 } = {}) {
  if (script.length) h.llm.push(...script);
  const before = sentTo(from).length;
  const res = await h.sendUpdate(tgUpdate({ from, text }), { agent });
  assert.equal(res.status, 200, await res.text());
  await h.until(() => sentTo(from).length >= before + replies, { what: `${replies} replies to ${text}` });
  return sentTo(from).slice(before);
}

async function usage(agent, query = "", route = "usage") {
  const r = await h.fetch(`/api/agents/${agent}/${route}${query}`, auth);
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

/** The ledger once `n` calls are in it (a drain settles after its reply). */
async function ledger(agent, n, query = "?period=today") {
  return h.until(async () => {
    const r = await usage(agent, query);
    return r.calls >= n ? r : null;
  }, { what: `${n} calls in ${agent}'s ledger` });
}

/** Spends `usd` in one call: a scripted usage of fresh input tokens. */
const spend = (usd, text = "spent") => ({ text, usage: { input_tokens: Math.round((usd * 1e6) / PRICE.input), output_tokens: 0 } });

describe("the ledger", () => {
  test("every call is priced from LLM_PRICES: the API's figures are the stand-in's usage at those prices", async () => {
    await say("main", "what does this cost?");
    const turn = h.llm.requests.map((r) => r.usage);
    const r = await ledger("main", 1);
    const u = turn[0];
    assert.equal(r.calls, 1);
    assert.equal(r.period, "today");
    assert.equal(r.currency, "USD");
    assert.equal(r.promptTokens, u.input + u.cacheRead + u.cacheWrite);
    assert.equal(r.completionTokens, u.output);
    assert.equal(r.totalTokens, r.promptTokens + r.completionTokens);
    assert.equal(r.cacheReadTokens, u.cacheRead);
    assert.equal(r.cacheWriteTokens, u.cacheWrite);
    assert.equal(r.cacheHitRate, Math.round((u.cacheRead / r.promptTokens) * 1e4) / 1e4);
    assert.equal(r.totalCost, round6(costOf(u)));
    assert.ok(r.totalCost > 0);
    assert.deepEqual(r.byModel["claude-test"], {
      calls: 1, tokens: r.totalTokens, promptTokens: r.promptTokens, completionTokens: r.completionTokens,
      cacheReadTokens: r.cacheReadTokens, cacheWriteTokens: r.cacheWriteTokens, cacheHitRate: r.cacheHitRate, cost: r.totalCost,
      // A conversation's cache is written for 5 minutes (LLM_CACHE_TTL=auto).
      cacheWrite1hTokens: 0,
    });
    assert.equal(r.cacheWrite1hTokens, 0);
    assert.equal(r.byKind.conversation.calls, 1);
    assert.deepEqual(r.unpricedModels, []);
  });

  test("a tool round is its own kind; a model without a price keeps its tokens with a null cost", async () => {
    await say("mystery", "read your soul", { script: [{ toolCall: { name: "read_file", input: { path: "SOUL.md" } } }, { text: "done" }] });
    const r = await ledger("mystery", 2);
    assert.deepEqual(Object.keys(r.byKind).sort(), ["conversation", "toolRound"]);
    const m = r.byModel["mystery-model"];
    assert.equal(m.cost, null);
    const tokens = h.llm.requests.reduce((n, q) => n + q.usage.input + q.usage.output + q.usage.cacheRead + q.usage.cacheWrite, 0);
    assert.equal(m.tokens, tokens, "the tokens are kept");
    assert.equal(r.totalCost, 0);
    assert.deepEqual(r.unpricedModels, ["mystery-model"]);
  });

  test("a thread's usage, by session key or `main`, with its steady-state cache hit rate", async () => {
    const before = (await usage("main", "?period=all")).calls;
    for (let i = 0; i < 4; i++) await say("main", `turn ${i} of a steady conversation`);
    const all = await ledger("main", before + 4, "?period=all");
    const byKey = await usage("main", "", `usage/threads/${encodeURIComponent("agent:main:main")}`);
    const byMain = await usage("main", "", "usage/threads/main");
    assert.equal(byKey.thread, "agent:main:main");
    assert.deepEqual(byMain, byKey);
    assert.equal(byKey.calls, all.calls, "every call so far was in the owner's DM");
    assert.ok(byKey.steadyState.calls >= 2, JSON.stringify(byKey.steadyState));
    assert.ok(byKey.steadyState.cacheHitRate >= 0.9, JSON.stringify(byKey.steadyState));
    const friend = await usage("main", "", `usage/threads/agent:main:telegram:dm:${FRIEND}`);
    assert.equal(friend.calls, 0);
  });

  test("by default a session sends its calls in one batch later, without waiting for another message", async () => {
    for (let i = 0; i < 3; i++) await say("batch", `quick ${i}`);
    const tokens = h.llm.requests.reduce((n, q) => n + q.usage.input + q.usage.output + q.usage.cacheRead + q.usage.cacheWrite, 0);
    const r = await ledger("batch", 3);
    assert.equal(r.calls, 3);
    assert.equal(r.totalTokens, tokens);
  });

  test("the footer, when asked, shows the turn's tokens, cost and model", async () => {
    const [reply] = await say("foot", "hello");
    const u = h.llm.requests[0].usage;
    const prompt = u.input + u.cacheRead + u.cacheWrite;
    const cost = `$${costOf(u).toFixed(4)}`;
    assert.equal(reply, `echo: hello\n\n[tokens: ${prompt} prompt + ${u.output} completion | cost: ${cost} | model: claude-test]`);
    const [plain] = await say("main", "no footer here");
    assert.equal(plain, "echo: no footer here", "off by default");
  });

  test("/usage answers the owner with the API's figures and costs no LLM call; others are refused", async () => {
    await say("main", "one more");
    const before = await ledger("main", 1);
    await h.until(async () => (await usage("main", "?period=today")).calls === before.calls, { what: "stable" });
    const calls = h.llm.requests.length;
    const [text] = await say("main", "/usage");
    const [today, month] = [await usage("main", "?period=today"), await usage("main", "?period=month")];
    const usd = (x) => (x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(4)}`);
    const line = (name, r) =>
      `${name}: ${usd(r.totalCost)} · ${r.totalTokens.toLocaleString("en-US")} tokens (${r.promptTokens.toLocaleString("en-US")} prompt + ` +
      `${r.completionTokens.toLocaleString("en-US")} completion) · ${r.calls} calls · cache hit rate ${Math.round(r.cacheHitRate * 100)}%`;
    assert.ok(text.includes(line("Today", today)), `${text}\n${line("Today", today)}`);
    assert.ok(text.includes(line("This month", month)), text);
    assert.match(text, /No budget set/);
    assert.equal(h.llm.requests.length, calls, "no LLM call");
    const [refused] = await say("main", "/usage", { from: FRIEND });
    assert.equal(refused, "Only my owner can see what I cost.");
    const history = await (await h.fetch("/api/agents/main/sessions/agent:main:main", auth)).json();
    assert.ok(!JSON.stringify(history.messages).includes("/usage"), "not part of the conversation");
  });
});

describe("the API's bad input", () => {
  test("bearer auth like every /api route", async () => {
    for (const p of ["/api/agents/main/usage", "/api/agents/main/usage/threads/main"]) {
      assert.equal((await h.fetch(p)).status, 401, p);
      assert.equal((await h.fetch(p, { headers: { authorization: "Bearer nope" } })).status, 401, p);
      assert.equal((await h.fetch(p, { headers: { authorization: ADMIN } })).status, 401, `${p} without Bearer`);
    }
  });

  test("bad periods and threads are 400 naming the problem, unknown agents 404, never a 500", async () => {
    for (const q of ["?period=yesterday", "?period=2026-13", "?period=2026-02-30", "?period="]) {
      const r = await h.fetch(`/api/agents/main/usage${q}`, auth);
      assert.equal(r.status, 400, q);
      assert.match(await r.text(), /period/, q);
    }
    for (const t of [encodeURIComponent("agent:other:main"), "a%3Ab", encodeURIComponent("agent:main:nonsense:x:y:z")]) {
      const r = await h.fetch(`/api/agents/main/usage/threads/${t}`, auth);
      assert.equal(r.status, 400, t);
      assert.match(await r.text(), /not a thread of agent/, t);
    }
    assert.equal((await h.fetch("/api/agents/nobody/usage", auth)).status, 404);
    assert.equal((await h.fetch("/api/agents/nobody/usage/threads/main", auth)).status, 404);
    assert.equal((await h.fetch("/api/agents/main/usage", { ...auth, method: "POST" })).status, 404);
    const ok = await h.fetch("/api/agents/main/usage?period=2026-11", auth);
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).period, "2026-11");
  });
});

describe("budgets", () => {
  test("80 % warns the owner once; at 100 % no call is made, the user is told when it resets, and the message waits for a raised limit", async () => {
    await say("tight", "first", { script: [spend(0.3, "first answer")] });
    const [answer, warning] = await say("tight", "second", { script: [spend(0.55, "second answer")], replies: 2 });
    assert.equal(answer, "second answer");
    assert.match(warning, /85% of my daily budget is spent \(\$0\.8500 of \$1\.00\)/);
    assert.match(warning, /Background work stops at 90%/);
    await say("tight", "third", { script: [spend(0.2, "third answer")] });
    await sleep(200);
    assert.equal(sentTo(OWNER).filter((t) => t.includes("Heads-up")).length, 1, "told once per period");

    const calls = h.llm.requests.length;
    const [stopped] = await say("tight", "are you there?");
    assert.equal(h.llm.requests.length, calls, "no LLM call at the limit");
    assert.match(stopped, /My daily budget is used up \(\$1\.05 of \$1\.00\)/);
    assert.match(stopped, /BUDGET_DAILY_USD/);
    // It resets at the next local midnight in Paris.
    const tomorrow = new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Paris" }).format(new Date(Date.now() + 86_400_000));
    assert.ok(stopped.includes(`${tomorrow} 00:00`), stopped);
    const session = await (await h.fetch("/api/agents/tight/sessions/agent:tight:main", auth)).json();
    assert.equal(session.open, 1, "the message waits");
    assert.ok(JSON.stringify(session.messages).includes("are you there?"), "and is in the history");
    const report = await usage("tight", "?period=today");
    assert.equal(report.budget.daily.reached, true);
    assert.equal(report.budget.daily.limitUsd, 1);
    assert.equal(report.totalCost, 1.05);

    // /usage still answers while the budget holds the queue.
    const [status] = await say("tight", "/usage");
    assert.match(status, /Daily budget: \$0\.0000 of \$1\.00 left \(105% used\) — reached/);

    // The owner raises the limit (a deploy): the next cron tick wakes the session.
    await h.restart({ bindings: { BUDGET_DAILY_USD__TIGHT: "5" } });
    h.reset();
    const worker = await h.mf.getWorker();
    await worker.scheduled({ scheduledTime: Date.now(), cron: "*/5 * * * *" });
    await h.until(() => sentTo(OWNER).some((t) => t === "echo: are you there?"), { what: "the held message answered" });
    assert.equal(h.llm.requests.length, 1);
    assert.match(JSON.stringify(h.llm.requests[0].body.messages), /are you there\?/);
    await h.settle("agent:tight:main");
  });

  test("concurrent sessions against one budget overshoot by no more than the calls in flight", async () => {
    await say("shared", "warm up", { script: [spend(0.9, "ok")] });
    h.llm.state.defaultDelayMs = 300;
    const per = 0.04;
    for (let i = 0; i < PEERS.length; i++) h.llm.push(spend(per, `answer ${i}`));
    await Promise.all(PEERS.map((p) => h.sendUpdate(tgUpdate({ from: p, text: `hello from ${p}` }), { agent: "shared" })));
    await h.until(() => PEERS.every((p) => sentTo(p).length === 1), { what: "every peer answered or told" });
    const answered = PEERS.filter((p) => sentTo(p)[0].startsWith("answer"));
    const told = PEERS.filter((p) => /budget is used up/.test(sentTo(p)[0]));
    assert.equal(answered.length + told.length, PEERS.length, JSON.stringify(PEERS.map((p) => sentTo(p))));
    assert.ok(told.length >= 1, "the limit stopped someone");
    const r = await ledger("shared", 1 + answered.length);
    const inFlight = h.llm.state.maxInFlight;
    assert.ok(r.totalCost <= 1 + inFlight * per + 1e-9, `spent ${r.totalCost} with ${inFlight} calls in flight at most`);
    assert.ok(inFlight < PEERS.length, `reservations kept calls from all starting at once (${inFlight})`);
  });

  test("background work stops first: no heartbeat call at 90 %, while conversations go on", async () => {
    await h.putFile("agents/bg/HEARTBEAT.md", "- [ ] Check the weather BG-ITEM\n");
    await say("bg", "spend", { script: [spend(0.92, "ok")] });
    const calls = h.llm.requests.length;
    const worker = await h.mf.getWorker();
    // Later than any tick so far (an older one only retries pending runs), in a new heartbeat slot.
    await worker.scheduled({ scheduledTime: Date.now() + 3_600_000, cron: "*/5 * * * *" });
    await h.until(async () => {
      const s = await (await h.fetch("/api/agents/bg/schedule", auth)).json();
      return s.heartbeat?.last?.outcome === "queued";
    }, { what: "heartbeat queued" });
    await h.settle("agent:bg:heartbeat");
    await sleep(100);
    assert.equal(h.llm.requests.length, calls, "no heartbeat LLM call");
    const r = await usage("bg", "?period=today");
    assert.equal(r.budget.daily.backgroundStopped, true);
    assert.equal(r.budget.daily.reached, false);
    const [reply] = await say("bg", "still there?");
    assert.equal(reply, "echo: still there?");
  });
});

describe("periods in the agent's time zone", () => {
  test("the same calls fall on each zone's own local day", async () => {
    const now = Date.now();
    const dateIn = (tz, t = now) => new Intl.DateTimeFormat("en-CA", { timeZone: tz }).format(new Date(t));
    // Kiritimati is UTC+14, Pago Pago UTC-11: the same instant is on different local days.
    await h.restart({ bindings: { TIMEZONE: "Pacific/Kiritimati" } });
    const all = (await usage("main", "?period=all")).calls;
    assert.ok(all > 0);
    const kiri = await usage("main", `?period=${dateIn("Pacific/Kiritimati")}`);
    assert.equal(kiri.calls, all, "every call of this run was today in Kiritimati");
    assert.equal(kiri.timezone, "Pacific/Kiritimati");
    const [y, m, d] = dateIn("Pacific/Kiritimati").split("-").map(Number);
    assert.equal(kiri.from, Date.UTC(y, m - 1, d) - 14 * 3_600_000, "the day starts at local midnight");
    assert.equal(kiri.until - kiri.from, 86_400_000);
    await h.restart({ bindings: { TIMEZONE: "Pacific/Pago_Pago" } });
    const pago = await usage("main", `?period=${dateIn("Pacific/Pago_Pago")}`);
    assert.equal(pago.calls, all);
    assert.notEqual(dateIn("Pacific/Pago_Pago"), dateIn("Pacific/Kiritimati"));
    assert.equal((await usage("main", `?period=${dateIn("Pacific/Kiritimati")}`)).calls, 0, "Kiritimati's day is later in Pago Pago");
    const today = await usage("main", "?period=today");
    assert.equal(today.period, "today");
    assert.equal(today.calls, all);
    // byDay: the same calls on Pago Pago's day here, on Kiritimati's there.
    const everything = await usage("main", "?period=all");
    assert.deepEqual(everything.byDay.map((d) => [d.date, d.calls]), [[dateIn("Pacific/Pago_Pago"), all]]);
    assert.equal(everything.byDay[0].tokens, everything.totalTokens);
    assert.ok(Math.abs(everything.byDay[0].costUsd - everything.totalCost) < 2e-6);
    assert.deepEqual(kiri.byDay.map((d) => [d.date, d.calls]), [[dateIn("Pacific/Kiritimati"), all]]);
    await h.restart({ bindings: { TIMEZONE: "Europe/Paris" } });
  });
});
