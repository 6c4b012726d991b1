// End to end: replies are never silently dropped. Telegram rate-limits,
// goes down, fails one piece of a long reply, blocks us; workerd restarts.
// The session's outbox keeps each reply and its alarm sends it later, each
// piece once and in order, or gives it up, tells the owner and lists it in
// the admin API.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { TG_ERRORS } from "./support/telegram.mjs";

const ADMIN = "test-admin-token";
const FRIEND_KEY = `agent:main:telegram:dm:${FRIEND}`;
const BRIEF_FRIEND_KEY = `agent:brief:telegram:dm:${FRIEND}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let h;
let dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "hearth-delivery-"));
  h = await startHearth({
    persist: dir,
    bindings: {
      ADMIN_TOKEN: ADMIN,
      AGENTS: "main,brief",
      // Tests only: no wait before a retry is longer than 2.5 s, so a
      // 120-second retry_after is honoured in 2.5 s.
      DELIVERY_MAX_WAIT_MS: "2500",
      // Agent `brief` gives a reply up after 3 s instead of a day.
      DELIVERY_GIVE_UP_MINUTES__BRIEF: "0.05",
    },
  });
});
after(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => h.reset());

const to = (chat) => (r) => Number(r.body.chat_id) === chat;
/** Every sendMessage to a chat, answered or not. */
const attemptsTo = (chat) => h.telegram.sent().filter(to(chat));
/** What arrived in a chat. */
const deliveredTo = (chat) => h.telegram.delivered().filter(to(chat));

async function adminStatus(agent, key) {
  const r = await h.fetch(`/api/agents/${agent}/sessions/${encodeURIComponent(key)}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

describe("reply delivery", () => {
  test("a 429 asking to wait 120 s: the turn does not wait, the reply goes when the wait is over, the next reply keeps its place", async () => {
    h.telegram.fail("sendMessage", 429, TG_ERRORS.flood(120));
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "first" }));
    await h.until(() => attemptsTo(FRIEND).length === 1, { what: "the refused attempt" });
    // The turn is over (nothing queued or running) while its reply waits.
    const waiting = await h.until(async () => {
      const s = await adminStatus("main", FRIEND_KEY);
      return s.open === 0 && s.outbox.waiting.length === 1 && s.outbox.waiting[0];
    }, { what: "the turn done, its reply waiting in the outbox" });
    assert.match(waiting.lastError, /429: Too Many Requests: retry after 120/);
    assert.equal(waiting.delivered, 0);
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "second" }));
    await h.until(() => deliveredTo(FRIEND).length === 2, { what: "both replies" });
    assert.deepEqual(deliveredTo(FRIEND).map((r) => r.body.text), ["echo: first", "echo: second"]);
    const [refused, retried] = attemptsTo(FRIEND);
    assert.ok(retried.at - refused.at >= 2400, `retried after ${retried.at - refused.at} ms: the wait was honoured (up to the test cap)`);
    await sleep(300);
    assert.equal(attemptsTo(FRIEND).length, 3, "each reply sent once");
    assert.equal((await adminStatus("main", FRIEND_KEY)).outbox.waiting.length, 0);
  });

  test("an outage longer than any in-turn retry: the reply arrives once, after recovery", async () => {
    h.telegram.outage({ chat: FRIEND });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "are you there?" }));
    await h.until(() => attemptsTo(FRIEND).length >= 6, { what: "six failed attempts" });
    assert.equal(deliveredTo(FRIEND).length, 0);
    h.telegram.recover();
    await h.until(() => deliveredTo(FRIEND).length === 1, { what: "the reply after recovery" });
    await sleep(400);
    assert.deepEqual(deliveredTo(FRIEND).map((r) => r.body.text), ["echo: are you there?"]);
  });

  test("a three-piece reply whose second piece fails: all three arrive, in order, each once", async () => {
    const parts = [1, 2, 3].map((i) => `Part ${i}: ${"lorem ipsum ".repeat(250).trim()}`);
    h.llm.push({ text: parts.join("\n\n") });
    h.telegram.outage({ chat: FRIEND, after: 1 });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "tell me a lot" }));
    // Six failures: longer than any retry within one call could sit out.
    await h.until(() => attemptsTo(FRIEND).length >= 7, { what: "the second piece failing six times" });
    assert.deepEqual(deliveredTo(FRIEND).map((r) => r.body.text), parts.slice(0, 1));
    assert.ok(attemptsTo(FRIEND).slice(1).every((r) => r.body.text === parts[1]), "the third piece did not overtake the second");
    h.telegram.recover();
    await h.until(() => deliveredTo(FRIEND).length === 3, { what: "all three pieces" });
    await sleep(400);
    assert.deepEqual(deliveredTo(FRIEND).map((r) => r.body.text), parts);
    for (const p of [parts[0], parts[2]]) assert.equal(attemptsTo(FRIEND).filter((r) => r.body.text === p).length, 1);
  });

  test("a reply still waiting is delivered after workerd restarts", async () => {
    h.telegram.outage({ chat: FRIEND });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "keep this for me" }));
    await h.until(async () => (await adminStatus("main", FRIEND_KEY)).outbox.waiting.length === 1, { what: "a waiting reply" });
    await h.restart({ settle: [FRIEND_KEY] });
    const before = attemptsTo(FRIEND).length;
    h.telegram.recover();
    await h.until(() => deliveredTo(FRIEND).length === 1, { what: "the reply after the restart", timeoutMs: 15000 });
    await sleep(400);
    assert.deepEqual(deliveredTo(FRIEND).map((r) => r.body.text), ["echo: keep this for me"]);
    assert.ok(attemptsTo(FRIEND).length > before, "sent by the restarted object");
  });

  test("a reply still failing after DELIVERY_GIVE_UP_MINUTES is given up, reported to the owner and listed in the admin API", async () => {
    h.telegram.outage({ chat: FRIEND });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "too late" }), { agent: "brief" });
    const report = await h.until(() => deliveredTo(OWNER).find((r) => /was not delivered/.test(r.body.text)), {
      what: "the report to the owner",
      timeoutMs: 15000,
    });
    for (const want of [`Telegram chat ${FRIEND}`, BRIEF_FRIEND_KEY, "still failing after", "502: Bad Gateway", "echo: too late"]) {
      assert.ok(report.body.text.includes(want), `${want} in ${report.body.text}`);
    }
    // Once the report's delivery is recorded, nothing waits any more.
    const s = await h.until(async () => {
      const st = await adminStatus("brief", BRIEF_FRIEND_KEY);
      return st.outbox.waiting.length === 0 && st;
    }, { what: "an empty outbox" });
    const gone = s.outbox.undelivered.find((r) => r.preview === "echo: too late");
    assert.ok(gone, JSON.stringify(s.outbox));
    assert.equal(gone.outcome, "expired");
    assert.match(gone.lastError, /502/);
    assert.ok(gone.gaveUpAt - gone.createdAt >= 3000, "kept trying for DELIVERY_GIVE_UP_MINUTES");
    // Given up means given up: Telegram coming back does not bring it back.
    const tries = attemptsTo(FRIEND).length;
    h.telegram.recover();
    await sleep(800);
    assert.equal(attemptsTo(FRIEND).length, tries);
  });

  test("a chat that blocked the bot is tried once; the owner is told and the admin API lists it", async () => {
    h.telegram.outage({ chat: FRIEND, status: 403, body: TG_ERRORS.blocked });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "bye" }));
    const report = await h.until(() => deliveredTo(OWNER).find((r) => /bot was blocked by the user/.test(r.body.text)), {
      what: "the report to the owner",
    });
    assert.match(report.body.text, new RegExp(`cannot be reached[\\s\\S]*echo: bye`));
    await sleep(500);
    assert.equal(attemptsTo(FRIEND).length, 1, "a 403 is not retried");
    const gone = (await adminStatus("main", FRIEND_KEY)).outbox.undelivered.find((r) => r.preview === "echo: bye");
    assert.equal(gone.outcome, "unreachable");
    assert.match(gone.lastError, /403: Forbidden: bot was blocked by the user/);
  });
});
