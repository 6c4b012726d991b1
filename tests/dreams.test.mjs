// End to end in workerd: recall evidence recorded by the agent's own memory
// use (group stores apart), the nightly dreaming sweep driven by the cron
// tick (promotes once per night with one LLM call, finds nothing with none,
// refuses a write that would lose a line, keeps to the budget's background
// share), approval of proposals with Telegram inline buttons and callback
// queries (and taps Hearth cannot act on), the history's daily clean-up
// whether or not the agent dreams.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "dream-admin";
const auth = { authorization: `Bearer ${ADMIN}` };
const CRON = "*/5 * * * *";
const MIN = 60_000;
const DAY = 24 * 60 * MIN;
// The nightly sweep's time: 12 hours from now, so that a test's ticks minutes
// apart are on one night whenever the suite runs (with the default 03:00,
// "the same night again" five minutes later was the next night just before 03:00 UTC).
const SWEEP_AT = new Date(Date.now() + 12 * 60 * MIN);
const BASE = {
  ADMIN_TOKEN: ADMIN,
  DREAM_AT: `${String(SWEEP_AT.getUTCHours()).padStart(2, "0")}:${String(SWEEP_AT.getUTCMinutes()).padStart(2, "0")}`,
  HEARTBEAT_ENABLED: "false",
  // Evidence is recorded on the real clock: every use in a test is on one day.
  DREAM_MIN_DAYS: "1",
  // What the score gate keeps out is shown natively (durable/src/dreaming/tests.rs).
  DREAM_MIN_SCORE: "0.05",
};
const TZ_NOTE = "Olga's time zone is America/Bogota since she moved in March";

async function get(h, path) {
  const r = await h.fetch(path, { headers: auth });
  assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
  return r.json();
}

async function text(h, key) {
  const o = await (await h.bucket()).get(key);
  return o ? o.text() : null;
}

/** One message of `from` in `chat` whose turn runs `steps` (LLM stand-in script); waits for the reply. */
async function turn(h, { from = OWNER, chat = OWNER, text: t, steps }) {
  const sent = h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).length;
  h.llm.push(...steps);
  const update = chat === GROUP
    ? tgUpdate({ from, chat, text: `@hearth_bot ${t}`, entities: [{ type: "mention", offset: 0, length: 11 }] })
    : tgUpdate({ from, chat, text: t });
  assert.equal((await h.sendUpdate(update)).status, 200);
  await h.until(() => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).length > sent, { what: `reply to ${t}` });
}

const tool = (name, input) => ({ toolCall: { name, input } });

/** Fires the cron trigger at `t` and waits until dreaming looked at it. */
async function tick(h, t) {
  const worker = await h.mf.getWorker();
  await worker.scheduled({ scheduledTime: t, cron: CRON });
  return h.until(async () => {
    const d = await get(h, "/api/agents/main/dreams");
    return d.lastCheckedTick === t && d;
  }, { what: `dreaming at ${new Date(t).toISOString()}` });
}

/**
 * The owner keeps coming back to the time zone note: five uses (two searches
 * that are one question, a read by name, and two recalls into turns, of
 * "what's my zone?" and "is it late in Bogota now?"), three questions.
 */
async function useTheNote(h) {
  await turn(h, { text: "remember my time zone", steps: [tool("memory_add", { name: "tz", content: TZ_NOTE }), { text: "noted" }] });
  await turn(h, { text: "what's my zone?", steps: [tool("memory_search", { query: "Olga time zone" }), { text: "Bogota" }] });
  await turn(h, { text: "and again?", steps: [tool("memory_search", { query: "zone time Olga" }), { text: "Bogota" }] });
  await turn(h, { text: "read it whole", steps: [tool("memory_get", { name: "tz" }), { text: "there" }] });
  // Recall brings it into this turn by itself (a question about Bogota).
  await turn(h, { text: "is it late in Bogota now?", steps: [{ text: "a bit" }] });
}

const judgement = (decisions) => ({ text: JSON.stringify({ decisions }) });
const sweepRequests = (h) => h.llm.requests.filter((r) => JSON.stringify(r.body.system ?? "").includes("You curate MEMORY.md"));

describe("recall evidence and the nightly sweep", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: BASE });
    await h.putFile("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
  });
  after(() => h.close());

  test("searches, reads and recalls count as evidence, per store; a group's store stays apart", async () => {
    await useTheNote(h);
    const recalled = h.llm.requests.at(-1);
    assert.match(JSON.stringify(recalled.body.messages), /Possibly relevant, from your memory/);
    // In the group: its own note, its own evidence.
    await turn(h, { from: FRIEND, chat: GROUP, text: "remember the picnic", steps: [tool("memory_add", { name: "picnic", content: "Picnic on Saturday at the lake" }), { text: "ok" }] });
    await turn(h, { from: FRIEND, chat: GROUP, text: "when is the picnic?", steps: [tool("memory_search", { query: "picnic" }), { text: "Saturday" }] });

    const main = await get(h, "/api/agents/main/memory/evidence?store=main");
    assert.equal(main.entries.length, 1, JSON.stringify(main));
    const tz = main.entries[0];
    assert.equal(tz.name, "tz");
    assert.deepEqual([tz.hits, tz.distinctQueries, tz.distinctDays], [5, 3, 1], "two searches are one question; two recalls two more");
    assert.ok(tz.lastScore > 0 && tz.lastScore < 1, `a share of what the question could score: ${tz.lastScore}`);
    const group = await get(h, `/api/agents/main/memory/evidence?store=${encodeURIComponent(`group:telegram:${GROUP}`)}`);
    assert.deepEqual(group.entries.map((e) => [e.name, e.hits]), [["picnic", 1]]);
  });

  test("a sweep promotes what kept coming up, once per night, with one LLM call", async () => {
    const id = (await get(h, "/api/agents/main/memory/evidence?store=main")).entries[0].entryId;
    h.llm.push(judgement([{ id, promote: true, fact: "Olga's time zone is America/Bogota" }]));
    const t = Date.now();
    const d = await tick(h, t);
    assert.equal(sweepRequests(h).length, 1);
    assert.equal(d.last.outcome, "done");
    const memory = await text(h, "agents/main/MEMORY.md");
    const minute = new Date(t).toISOString().slice(0, 16).replace("T", " ");
    assert.ok(memory.startsWith(`## People\n- Luis prefers Spanish.\n\n## Dreamed ${minute} UTC\n- Olga's time zone is America/Bogota _(score=`), memory);
    assert.match(memory, /, hits=5, days=1\)_\n$/);
    const diary = await text(h, "agents/main/DREAMS.md");
    assert.match(diary, /✅ Promoted "Olga's time zone is America\/Bogota" \(from `tz`/);
    assert.equal(d.memoriesPromoted, 1);
    assert.equal(d.lastDreamTs, t);
    // The change is in MEMORY.md's history, by dreaming; its cost is its own kind.
    const versions = await get(h, "/api/agents/main/history/MEMORY.md");
    assert.equal(versions.versions[0].actor, "dreaming");
    const usage = await get(h, "/api/agents/main/usage?period=all");
    assert.equal(usage.byKind.dreaming.calls, 1);
    // my_stats tells the agent.
    await turn(h, { text: "how are you doing?", steps: [tool("my_stats", {}), { text: "fine" }] });
    const result = JSON.stringify(h.llm.requests.at(-1).body.messages.at(-1));
    assert.match(result, /\\"memories_promoted\\":1/);
    assert.match(result, new RegExp(`\\\\"last_dream_ts\\\\":${t}`));

    // The same night again: nothing runs.
    await tick(h, t + 5 * MIN);
    assert.equal(sweepRequests(h).length, 1);
    assert.equal((await get(h, "/api/agents/main/dreams")).lastDreamTs, t);
  });

  test("/undo in the owner's chat takes the dreamed fact back out of MEMORY.md (the diary stays)", async () => {
    const diary = await text(h, "agents/main/DREAMS.md");
    const calls = h.llm.requests.length;
    await turn(h, { text: "/undo", steps: [] });
    assert.equal(h.llm.requests.length, calls, "no LLM call for /undo");
    assert.equal(await text(h, "agents/main/MEMORY.md"), "## People\n- Luis prefers Spanish.\n");
    const told = h.telegram.sent().filter((r) => Number(r.body.chat_id) === OWNER).at(-1).body.text;
    assert.match(told, /Undone: took the facts my dreaming added back out of MEMORY\.md/);
    assert.match(told, /dreaming \d{4}-\d\d-\d\d: 1 fact\(s\) promoted/);
    assert.equal(await text(h, "agents/main/DREAMS.md"), diary, "the diary is a record, not undone");
    const versions = await get(h, "/api/agents/main/history/MEMORY.md");
    assert.deepEqual(versions.versions.slice(0, 2).map((v) => v.actor), ["owner", "dreaming"], "the undo is a version too");
  });

  // After the /undo above: the undone fact's memory stays settled, so it is not proposed again.
  test("a night with nothing new makes no LLM call and writes nothing", async () => {
    const calls = h.llm.requests.length;
    const diary = await text(h, "agents/main/DREAMS.md");
    const t = Date.now() + DAY;
    const d = await tick(h, t);
    assert.equal(d.last.outcome, "nothingNew");
    assert.equal(d.lastDreamTs, t);
    assert.equal(h.llm.requests.length, calls, "0 LLM calls, 0 tokens");
    assert.equal(await text(h, "agents/main/DREAMS.md"), diary);
  });
});

describe("a sweep that would remove a line", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: BASE });
    await h.putFile("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
  });
  after(() => h.close());

  test("is refused: MEMORY.md changed while the model was thinking, nothing is lost", async () => {
    await useTheNote(h);
    const id = (await get(h, "/api/agents/main/memory/evidence?store=main")).entries[0].entryId;
    let release;
    const gate = new Promise((r) => (release = r));
    h.llm.push({ ...judgement([{ id, promote: true, fact: "Olga's time zone is America/Bogota" }]), gate });
    const worker = await h.mf.getWorker();
    const t = Date.now();
    await worker.scheduled({ scheduledTime: t, cron: CRON });
    await h.until(() => sweepRequests(h).length === 1, { what: "the sweep's call" });
    // Meanwhile the owner adds a line through the admin API.
    const owners = "## People\n- Luis prefers Spanish.\n- Ana uses a Samsung.\n";
    const put = await h.fetch("/api/agents/main/files/MEMORY.md?why=a+line+of+mine", { method: "PUT", headers: auth, body: owners });
    assert.equal(put.status, 200, await put.clone().text());
    release();
    const d = await h.until(async () => {
      const s = await get(h, "/api/agents/main/dreams");
      return s.lastCheckedTick === t && s;
    }, { what: "the sweep's end" });
    assert.equal(d.last.outcome, "refused");
    assert.equal(await text(h, "agents/main/MEMORY.md"), owners, "the owner's line stays; no Dreamed section");
    const diary = await text(h, "agents/main/DREAMS.md");
    assert.match(diary, /\*\*Refused\*\*: MEMORY\.md changed while I was dreaming; writing my version would have removed 1 line\(s\) \("- Ana uses a Samsung\."\)/);
    assert.equal(d.memoriesPromoted, 0);
  });
});

describe("approval on Telegram", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { ...BASE, DREAM_APPROVAL: "telegram", DREAM_APPROVAL_HOURS: "1" } });
  });
  after(() => h.close());

  const proposals = () => h.telegram.sent().filter((r) => r.body.reply_markup);
  async function tap(from, proposal, action) {
    const data = proposal.body.reply_markup.inline_keyboard[0].find((b) => b.callback_data.endsWith(`:${action}`)).callback_data;
    const messageId = proposal.messageId;
    const answered = h.telegram.calls("answerCallbackQuery").length;
    const res = await h.sendUpdate(h.telegram.tapUpdate({ from, chat: OWNER, messageId, data, updateId: 900000 + answered }));
    assert.equal(res.status, 200, await res.clone().text());
    await h.until(() => h.telegram.calls("answerCallbackQuery").length > answered, { what: "the tap answered" });
    return h.telegram.calls("answerCallbackQuery").at(-1);
  }

  test("proposals come with buttons; only approved facts are written; rejections are remembered; the rest expire", async () => {
    await useTheNote(h);
    await turn(h, { text: "my sister", steps: [tool("memory_add", { name: "sister", content: "Olga's sister Ana lives in Lima" }), { text: "ok" }] });
    await turn(h, { text: "where is Ana?", steps: [tool("memory_search", { query: "sister Ana" }), { text: "Lima" }] });
    await turn(h, { text: "Ana again", steps: [tool("memory_search", { query: "Ana Lima" }), { text: "Lima" }] });
    await turn(h, { text: "my plants", steps: [tool("memory_add", { name: "plants", content: "The plants need water on Mondays" }), { text: "ok" }] });
    await turn(h, { text: "plants?", steps: [tool("memory_search", { query: "plants water" }), { text: "Mondays" }] });
    await turn(h, { text: "plants again?", steps: [tool("memory_search", { query: "water Mondays" }), { text: "Mondays" }] });
    await turn(h, { text: "plants, once more", steps: [tool("memory_get", { name: "plants" }), { text: "Mondays" }] });
    const ev = (await get(h, "/api/agents/main/memory/evidence?store=main")).entries;
    const idOf = (name) => ev.find((e) => e.name === name).entryId;
    h.llm.push(judgement([
      { id: idOf("tz"), promote: true, fact: "Olga's time zone is America/Bogota" },
      { id: idOf("sister"), promote: true, fact: "Olga's sister Ana lives in Lima" },
      { id: idOf("plants"), promote: true, fact: "The plants need water on Mondays" },
    ]));
    const t = Date.now();
    await tick(h, t);
    await h.until(() => proposals().length === 3, { what: "three proposals sent" });
    assert.equal(await text(h, "agents/main/MEMORY.md"), null, "nothing is written before an answer");
    const delivered = h.telegram.delivered().filter((r) => r.body.reply_markup);
    const sentIds = h.telegram.state.requests.filter((r) => r.method === "sendMessage" && r.body.reply_markup);
    // Which message id each proposal got: in order of sending, as the stand-in numbered them.
    const messages = [...h.telegram.state.messages.entries()].filter(([, m]) => m.reply_markup);
    const byFact = (needle) => {
      const [key] = messages.find(([, m]) => m.text.includes(needle));
      const req = sentIds.find((r) => r.body.text.includes(needle));
      return { body: req.body, messageId: Number(key.split(":")[1]) };
    };
    assert.equal(delivered.length, 3);
    for (const p of delivered) {
      assert.equal(Number(p.body.chat_id), OWNER);
      assert.deepEqual(p.body.reply_markup.inline_keyboard[0].map((b) => b.text), ["✅ Approve", "❌ Reject"]);
    }
    const tz = byFact("America/Bogota");
    const sister = byFact("sister Ana");
    const plants = byFact("plants");

    // Someone else's tap changes nothing.
    const stranger = await tap(FRIEND, tz, "a");
    assert.match(stranger.body.text, /Only my owner/);
    // The owner approves one and rejects another.
    assert.match((await tap(OWNER, tz, "a")).body.text, /Approved/);
    assert.match((await tap(OWNER, sister, "r")).body.text, /Rejected/);
    const memory = await text(h, "agents/main/MEMORY.md");
    assert.match(memory, /^## Dreamed \d{4}-\d\d-\d\d \d\d:\d\d UTC\n- Olga's time zone is America\/Bogota _\(score=/);
    assert.doesNotMatch(memory, /sister|plants/);
    const buttons = (p) => h.telegram.message(OWNER, p.messageId).reply_markup.inline_keyboard[0].map((b) => b.text);
    assert.deepEqual(buttons(tz), ["✅ Approved: in MEMORY.md"]);
    assert.deepEqual(buttons(sister), ["❌ Rejected: I will not propose it again"]);
    // A second tap on an answered proposal.
    assert.match((await tap(OWNER, tz, "a")).body.text, /Already approved/);

    // An hour later the third expires, unanswered; its buttons say so.
    await tick(h, t + 61 * MIN);
    await h.until(() => buttons(plants)[0] === "⌛ Expired: not written", { what: "expired buttons" });
    assert.doesNotMatch(await text(h, "agents/main/MEMORY.md"), /plants/);
    const view = await get(h, "/api/agents/main/dreams");
    assert.deepEqual(view.proposals.map((p) => p.state).sort(), ["approved", "expired", "rejected"]);

    // The next night: the rejected fact is not proposed again; the expired one may be.
    h.llm.push(judgement([{ id: idOf("plants"), promote: true, fact: "The plants need water on Mondays" }]));
    await tick(h, t + DAY);
    const asked = sweepRequests(h).at(-1);
    const askedAbout = JSON.stringify(asked.body.messages);
    assert.match(askedAbout, /plants/);
    assert.doesNotMatch(askedAbout, /sister Ana lives/, "refused: settled for good");
    await h.until(() => proposals().length === 4, { what: "the expired fact proposed again" });
  });
});

describe("a spent budget", () => {
  const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
  let h;
  before(async () => {
    h = await startHearth({
      bindings: { ...BASE, LLM_PRICES: JSON.stringify({ "claude-test": PRICE }), BUDGET_DAILY_USD: "1", USAGE_SETTLE_MS: "0" },
    });
  });
  after(() => h.close());

  test("skips the sweep: no LLM call, no dreaming cost, the reason in the admin view", async () => {
    await useTheNote(h);
    assert.equal((await get(h, "/api/agents/main/memory/evidence?store=main")).entries[0].name, "tz", "a candidate waits");
    // One conversation turn spends 95 % of today's budget: past the background share (90 %).
    const usd = 0.95;
    await turn(h, { text: "a long question", steps: [{ text: "a long answer", usage: { input_tokens: Math.round((usd * 1e6) / PRICE.input), output_tokens: 0 } }] });
    await h.until(async () => (await get(h, "/api/agents/main/usage?period=today")).totalCost >= usd, { what: "the spend in the ledger" });
    const calls = h.llm.requests.length;
    const d = await tick(h, Date.now());
    assert.equal(d.last.outcome, "skippedBudget", JSON.stringify(d.last));
    assert.match(d.last.note, /BUDGET_BACKGROUND_PERCENT/);
    assert.equal(sweepRequests(h).length, 0, "no sweep request");
    assert.equal(h.llm.requests.length, calls);
    const usage = await get(h, "/api/agents/main/usage?period=all");
    assert.equal(usage.byKind.dreaming, undefined, JSON.stringify(usage.byKind));
    assert.equal(await text(h, "agents/main/MEMORY.md"), null);
  });
});

describe("the history's clean-up", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { ...BASE, DREAMING: "off" } });
  });
  after(() => h.close());

  test("runs daily with dreaming off: an old orphan blob goes, a kept change's blobs stay", async () => {
    for (const body of ["I am calm.\n", "I am calm and brief.\n"]) {
      const put = await h.fetch("/api/agents/main/files/SOUL.md?why=tone", { method: "PUT", headers: auth, body });
      assert.equal(put.status, 200, await put.clone().text());
    }
    const blob = (t) => `history/main/blobs/${createHash("sha256").update(t).digest("hex")}`;
    // Content no kept change names (its records pruned long ago).
    const bucket = await h.bucket();
    await bucket.put(blob("forgotten\n"), "forgotten\n");
    // Two hours on: every blob is past the clean-up's grace hour.
    const d = await tick(h, Date.now() + 2 * 60 * MIN);
    assert.equal(d.settings.enabled, false);
    assert.equal(await bucket.head(blob("forgotten\n")), null, "the orphan is gone");
    for (const kept of ["I am calm.\n", "I am calm and brief.\n"]) {
      assert.ok(await bucket.head(blob(kept)), `a kept version stays: ${kept}`);
    }
  });
});

describe("a tap Hearth cannot act on", () => {
  let h;
  before(async () => {
    // Approval asked for, but the owner is on Discord only: no Telegram owner to act for.
    h = await startHearth({ bindings: { ...BASE, DREAM_APPROVAL: "telegram", OWNER_IDS: "discord:80351110224678912" } });
  });
  after(() => h.close());

  test("is answered and acknowledged with 200, so Telegram stops delivering it", async () => {
    const update = h.telegram.tapUpdate({ from: OWNER, chat: OWNER, messageId: 1, data: "dream:1:a", updateId: 910001 });
    const res = await h.sendUpdate(update);
    assert.equal(res.status, 200, await res.clone().text());
    const answers = h.telegram.calls("answerCallbackQuery");
    assert.equal(answers.length, 1);
    assert.equal(answers[0].body.callback_query_id, update.callback_query.id);
    assert.match(answers[0].body.text, /can't act on this button/);
  });
});
