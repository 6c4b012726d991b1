// End to end: reminders the agent sets itself (the `remind` tool, through
// the LLM stand-in), kept by the Agent object, fired by its Durable Object
// alarm into the chat where they were set, in workerd: on time after a
// restart of the runtime, once; in a group; listed and cancelled from the
// chat and the admin API; bad input is a tool error.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, telegramTurn, tgUpdate, toolResults } from "./support/hearth.mjs";

const ADMIN = "test-admin-token";
const MAIN = "agent:main:main";
const GROUP_KEY = `agent:main:telegram:group:${GROUP}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let h;
let dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "hearth-reminders-"));
  h = await startHearth({ persist: dir, bindings: { ADMIN_TOKEN: ADMIN, TIMEZONE: "Europe/Paris" } });
});
after(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);
const said = (chatId, text) => sentTo(chatId).filter((r) => r.body.text.includes(text));
const mention = (text) => tgUpdate({ from: FRIEND, chat: GROUP, text: `@hearth_bot ${text}`, entities: [{ type: "mention", offset: 0, length: 11 }] });

async function api(p, init = {}) {
  const res = await h.fetch(`/api/agents/main${p}`, { ...init, headers: { authorization: `Bearer ${ADMIN}` } });
  return { status: res.status, body: await res.json() };
}

/** One turn in which the model calls `remind` with `input`, then says `reply`; the tool's result. */
async function remind(update, chat, input, reply = "Noted.") {
  h.llm.push({ toolCall: { name: "remind", input } }, { text: reply });
  const reqs = await telegramTurn(h, update, chat);
  assert.equal(reqs.length, 2);
  assert.ok(reqs[0].body.tools.some((t) => t.name === "remind"), "the tool is offered");
  const result = toolResults(reqs[1]).at(-1);
  return { ...result, value: result.isError ? result.text : JSON.parse(result.text) };
}

describe("reminders", () => {
  test("set in a Telegram DM, the runtime restarted before it is due: it arrives once, on time, with no LLM call", async () => {
    const r = await remind(tgUpdate({ text: "remind me in 10 seconds to stretch" }), OWNER, { in: "10s", text: "Stretch your legs" }, "I'll remind you.");
    assert.equal(r.isError, false, r.text);
    assert.match(r.value.fires, /^today \d\d:\d\d \(\d{4}-\d\d-\d\d \d\d:\d\d \(\w+\) CES?T\), in 10 seconds$/);
    const [pending] = (await api("/reminders")).body.reminders;
    assert.equal(pending.text, "Stretch your legs");
    const due = pending.nextAt;
    // Dispose workerd and start it again on the same persisted storage.
    await h.restart({ settle: [MAIN] });
    assert.ok(Date.now() < due - 1000, "restarted before it was due");
    const calls = h.llm.requests.length;
    await h.until(() => said(OWNER, "Stretch your legs").length > 0, { timeoutMs: due - Date.now() + 5000, what: "the reminder" });
    const arrived = said(OWNER, "Stretch your legs")[0];
    const lateness = arrived.at - due;
    console.log(`reminder after a restart: ${lateness} ms after its time`);
    assert.ok(lateness >= 0 && lateness <= 2000, `within 2 s of its time: ${lateness} ms`);
    assert.equal(arrived.body.text, "⏰ Stretch your legs");
    await sleep(1500);
    assert.equal(said(OWNER, "Stretch your legs").length, 1, "once");
    assert.equal(h.llm.requests.length, calls, "sending the text costs no LLM call");
    assert.deepEqual((await api("/reminders")).body.reminders, [], "done");
    const history = (await h.sessionStatus(MAIN)).messages;
    assert.match(JSON.stringify(history.at(-1)), /Stretch your legs/, "in the conversation's history");
  });

  test("one due while the runtime is down fires once when it is back", async () => {
    const r = await remind(tgUpdate({ text: "remind me in 3 seconds to breathe" }), OWNER, { in: "3s", text: "Breathe out" });
    assert.equal(r.isError, false, r.text);
    const [{ nextAt: due }] = (await api("/reminders")).body.reminders;
    await h.restart({ settle: [MAIN], downMs: Math.max(0, due - Date.now()) + 3000 });
    const back = Date.now();
    assert.ok(back > due + 2000, "it was due while nothing ran");
    await h.until(() => said(OWNER, "Breathe out").length > 0, { timeoutMs: 10000, what: "the missed reminder" });
    console.log(`a reminder missed while down: sent ${said(OWNER, "Breathe out")[0].at - back} ms after the runtime was back`);
    await sleep(1500);
    assert.equal(said(OWNER, "Breathe out").length, 1, "once");
  });

  test("in a group it fires in the group, quoting who asked, with the group's scope for a task", async () => {
    await h.putFile("agents/main/MEMORY.md", "- PRIVATE-REMINDER-FACT");
    const ask = mention("remind us in 3 seconds to order pizza");
    const r = await remind(ask, GROUP, { in: "3s", text: "Time to order the pizza" });
    assert.equal(r.isError, false, r.text);
    await h.until(() => said(GROUP, "order the pizza").length > 0, { timeoutMs: 8000, what: "the group's reminder" });
    const sent = said(GROUP, "order the pizza")[0];
    assert.equal(sent.body.reply_parameters?.message_id, ask.message.message_id, "it quotes the message that set it");
    assert.equal(said(OWNER, "order the pizza").length, 0);
    // A task there: a turn in the group's session, never with the owner's memory.
    const t = await remind(mention("in 3 seconds, check the weather for the picnic"), GROUP, { in: "3s", text: "Check the weather for the picnic", run: "task" });
    assert.equal(t.value.run, "task");
    const before = h.llm.requests.length;
    h.llm.push({ text: "Sunny all afternoon: picnic is on." });
    await h.until(() => said(GROUP, "picnic is on").length > 0, { timeoutMs: 8000, what: "the task's answer" });
    const req = h.llm.requests[before];
    assert.match(JSON.stringify(req.body.messages.at(-1)), /Check the weather for the picnic/);
    assert.ok(!req.raw.includes("PRIVATE-REMINDER-FACT"), "a group's task never sees the owner's memory");
  });

  test("list and cancel: in the chat (no LLM call for /reminders), by the tool and over the admin API", async () => {
    await remind(tgUpdate({ text: "remind me in an hour to call mum" }), OWNER, { in: "1h", text: "Call mum" });
    const b = await remind(tgUpdate({ text: "and tomorrow at 9 to water the plants" }), OWNER, { at: "09:00", text: "Water the plants" });
    assert.match(b.value.note ?? "", /next such time/);
    await remind(mention("remind us at 18:00 about the match"), GROUP, { cron: "0 18 * * *", text: "The match starts" });
    // `/reminders` in the group: its own only, without an LLM call.
    const calls = h.llm.requests.length;
    await h.sendUpdate(tgUpdate({ from: FRIEND, chat: GROUP, text: "/reminders@hearth_bot", entities: [{ type: "bot_command", offset: 0, length: 21 }] }));
    await h.until(() => said(GROUP, "Reminders in this chat").length > 0, { what: "the group's /reminders" });
    const listing = said(GROUP, "Reminders in this chat")[0].body.text;
    assert.match(listing, /The match starts/);
    assert.doesNotMatch(listing, /Call mum/);
    // The owner's private chat sees every chat's.
    await h.sendUpdate(tgUpdate({ text: "/reminders" }));
    await h.until(() => said(OWNER, "Your reminders, in every chat (3)").length > 0, { what: "the owner's /reminders" });
    assert.equal(h.llm.requests.length, calls, "no LLM call");
    const all = (await api("/reminders")).body;
    assert.equal(all.reminders.length, 3);
    assert.ok(all.storageBytes > 0);
    const mum = all.reminders.find((r) => r.text === "Call mum");
    // The group cannot cancel the owner's; the owner's chat can.
    const refused = await remind(mention("cancel the reminder"), GROUP, { action: "cancel", id: mum.id });
    assert.equal(refused.isError, true);
    const done = await remind(tgUpdate({ text: "cancel mum" }), OWNER, { action: "cancel", id: mum.id });
    assert.equal(done.value.cancelled[0].text, "Call mum");
    // The admin API: one, then the rest; a second cancel is a 404.
    const plants = (await api("/reminders")).body.reminders.find((r) => r.text === "Water the plants");
    assert.equal((await api(`/reminders/${plants.id}`)).body.reminders[0].chat, "your private chat (Telegram)");
    assert.equal((await api(`/reminders/${plants.id}`, { method: "DELETE" })).status, 200);
    assert.equal((await api(`/reminders/${plants.id}`, { method: "DELETE" })).status, 404);
    const byGroup = await api(`/reminders?session=${encodeURIComponent(GROUP_KEY)}`);
    assert.equal(byGroup.body.reminders.length, 1);
    assert.equal((await api("/reminders", { method: "DELETE" })).body.cancelled.length, 1);
    assert.deepEqual((await api("/reminders")).body.reminders, []);
  });

  test("a time in the past is a tool error that sets nothing", async () => {
    const r = await remind(tgUpdate({ text: "remind me at 9 on new year's day 2020" }), OWNER, { at: "2020-01-01 09:00", text: "Too late" }, "That time has passed.");
    assert.equal(r.isError, true);
    assert.match(r.text, /has passed/);
    const bad = await remind(tgUpdate({ text: "every weird time" }), OWNER, { cron: "every day", text: "x" }, "I could not.");
    assert.equal(bad.isError, true);
    assert.deepEqual((await api("/reminders")).body.reminders, []);
  });
});
