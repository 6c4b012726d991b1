// People from the chat, end to end in workerd: a stranger's pairing code
// approved by the owner over Telegram lets them in at once, as a guest (no
// private files), and across a restart; /revoke takes them out; a stranger
// cannot approve themself; a fresh agent is claimed with its one-time code
// (also through Telegram's deep link, /start CODE). No LLM call for any of it.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const PAT = 626262; // a stranger, until the owner lets them in
const EVE = 515151; // another stranger
const ADMIN = "people-admin-token";
const PRIVATE = "PRIVATE-MARK-OLGA-LIKES-FIGS";

/** The texts the bot sent to `chat`, in order. */
const sentTo = (h, chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => String(r.body.text));

/** Sends an update, expects 200, and waits until `chat` got one more message from the bot. */
async function say(h, update, chat = update.message.chat.id) {
  const before = sentTo(h, chat).length;
  const res = await h.sendUpdate(update);
  assert.equal(res.status, 200, await res.text());
  await h.until(() => sentTo(h, chat).length > before, { what: `a message to ${chat}` });
  return sentTo(h, chat).at(-1);
}

const codeIn = (text) => text.match(/this code: ([A-HJ-NP-Z2-9]{8})/)?.[1];

describe("letting people in with pairing codes", () => {
  let h;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-people-"));
  before(async () => {
    h = await startHearth({ persist: dir, bindings: { ALLOW_FROM: "", ADMIN_TOKEN: ADMIN } });
    await h.putFile("agents/main/MEMORY.md", `# Memory\n\n- ${PRIVATE}\n`);
  });
  after(async () => {
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let code;
  test("a stranger gets a code to give the owner, and no LLM call", async () => {
    const notice = await say(h, tgUpdate({ from: PAT, text: "hi, may I talk to you?" }));
    code = codeIn(notice);
    assert.ok(code, notice);
    assert.match(notice, /\/approve [A-Z2-9]{8}/);
    assert.match(notice, /telegram:626262/);
    assert.equal(h.llm.requests.length, 0);
    // The owner's People page lists the request.
    const people = (await (await h.fetch("/api/agents/main/people", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).list;
    assert.deepEqual(people.pending.map((p) => [p.who, p.code]), [["telegram:626262", code]]);
  });

  test("a stranger sending /approve with their own code changes nothing", async () => {
    const res = await h.sendUpdate(tgUpdate({ from: PAT, text: `/approve ${code}` }));
    assert.equal(res.status, 200);
    const again = await h.sendUpdate(tgUpdate({ from: PAT, text: "now?" }));
    assert.equal(await again.text(), "not allowed");
    assert.equal(h.llm.requests.length, 0, "no LLM call, no self-approval");
    const people = (await (await h.fetch("/api/agents/main/people", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).list;
    assert.equal(people.guests.length, 0);
    assert.equal(people.pending.length, 1, "the request still waits for the owner");
  });

  test("the owner's wrong code is told as such; the right one lets them in at once", async () => {
    const wrong = await say(h, tgUpdate({ from: OWNER, text: "/approve ZZZZ2345" }));
    assert.match(wrong, /no code like that/);
    const before = sentTo(h, PAT).length;
    const ok = await say(h, tgUpdate({ from: OWNER, text: `/approve ${code.toLowerCase()}` }));
    assert.match(ok, /may talk to me now, as a guest/);
    await h.until(() => sentTo(h, PAT).length > before, { what: "the welcome note" });
    assert.match(sentTo(h, PAT).at(-1), /let you in/);
    assert.equal(h.llm.requests.length, 0, "no LLM call for the commands");
    const twice = await say(h, tgUpdate({ from: OWNER, text: `/approve ${code}` }));
    assert.match(twice, /used already/);
  });

  test("the guest is answered in a session of their own, without the owner's private files", async () => {
    const answer = await say(h, tgUpdate({ from: PAT, text: "what do you know about Olga?" }));
    assert.match(answer, /echo: what do you know about Olga\?/);
    assert.equal(h.llm.requests.length, 1);
    assert.ok(!systemText(h.llm.requests[0]).includes(PRIVATE), "MEMORY.md stays out of a guest's prompt");
    const status = await h.sessionStatus("agent:main:telegram:dm:626262");
    assert.ok(status.messageCount >= 2, "their own DM session");
    const owner = await h.sessionStatus("agent:main:main");
    assert.ok(!(owner.messages ?? []).some((m) => JSON.stringify(m).includes("Olga?")), "not the owner's main session");
  });

  test("after a restart the guest is still let in", async () => {
    await h.restart({ settle: ["agent:main:telegram:dm:626262"] });
    h.llm.reset();
    const answer = await say(h, tgUpdate({ from: PAT, text: "still there?" }));
    assert.match(answer, /echo: still there\?/);
    assert.equal(h.llm.requests.length, 1);
    const list = await say(h, tgUpdate({ from: OWNER, text: "/people" }));
    assert.match(list, /telegram:626262/);
    assert.equal(h.llm.requests.length, 1, "/people costs no LLM call");
  });

  test("/revoke takes them out at once, and the audit shows who did what", async () => {
    const out = await say(h, tgUpdate({ from: OWNER, text: "/revoke telegram:626262" }));
    assert.match(out, /can no longer talk to me/);
    h.llm.reset();
    const res = await h.sendUpdate(tgUpdate({ from: PAT, text: "hello again" }));
    assert.equal(res.status, 200);
    await h.settle("agent:main:telegram:dm:626262");
    assert.equal(h.llm.requests.length, 0, "a revoked guest gets no LLM call");
    const people = (await (await h.fetch("/api/agents/main/people", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).list;
    assert.equal(people.guests.length, 0);
    const actions = people.events.map((e) => `${e.action} ${e.subject} by ${e.by} in ${e.place}`);
    assert.deepEqual(actions, ["revoked telegram:626262 by telegram:4242 in telegram chat 4242", "approved telegram:626262 by telegram:4242 in telegram chat 4242"]);
    // The workspace history's log has them too.
    const history = await (await h.fetch("/api/agents/main/history", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const why = (history.changes ?? history).map((c) => c.why).join("\n");
    assert.match(why, /revoked telegram:626262 .*by telegram:4242 in telegram chat 4242/);
    assert.match(why, /approved telegram:626262/);
  });

  test("a group gets a code when someone mentions the bot, and the owner lets it in", async () => {
    const group = -100777;
    const quiet = await h.sendUpdate(tgUpdate({ from: EVE, chat: group, text: "no mention here" }));
    assert.equal(await quiet.text(), "group not allowed");
    const mention = tgUpdate({ from: EVE, chat: group, text: "@hearth_bot hello?", entities: [{ type: "mention", offset: 0, length: 11 }] });
    const notice = await say(h, mention, group);
    const groupCode = codeIn(notice);
    assert.ok(groupCode, notice);
    assert.match(notice, /in our private chat/);
    await say(h, tgUpdate({ from: OWNER, text: `/approve ${groupCode}` }));
    await h.until(() => sentTo(h, group).some((t) => /let this group in/.test(t)), { what: "the group told" });
    h.llm.reset();
    const again = tgUpdate({ from: EVE, chat: group, text: "@hearth_bot hello now?", entities: [{ type: "mention", offset: 0, length: 11 }] });
    // The answer, not whatever reached the group last: once, on a loaded
    // machine, a second copy of the welcome landed after the mention (the
    // outbox sends at least once; a send that timed out is sent again).
    const before = sentTo(h, group).length;
    const res = await h.sendUpdate(again);
    assert.equal(res.status, 200, await res.text());
    const answer = await h.until(() => sentTo(h, group).slice(before).find((t) => /echo/.test(t)), { what: "the group answered" });
    assert.match(answer, /echo/);
    assert.ok(!systemText(h.llm.requests[0]).includes(PRIVATE), "a group never sees MEMORY.md");
  });
});

describe("claiming a fresh agent", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { OWNER_IDS: "", ALLOW_FROM: "", ADMIN_TOKEN: ADMIN } });
  });
  after(async () => h?.close());

  test("the console shows a one-time claim code; /start CODE makes the sender the owner", async () => {
    const people = (await (await h.fetch("/api/agents/main/people", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).list;
    assert.match(people.claim, /^[A-HJ-NP-Z2-9]{8}$/);
    const hello = await say(h, tgUpdate({ from: PAT, text: "hello" }));
    assert.match(hello, /I have no owner yet/);
    assert.match(hello, /\/claim/);
    const wrong = await say(h, tgUpdate({ from: EVE, text: "/claim ABCD2345" }));
    assert.match(wrong, /no claim code like that/);
    const claimed = await say(h, tgUpdate({ from: PAT, text: `/start ${people.claim}` }));
    assert.match(claimed, /You are my owner now/);
    assert.equal(h.llm.requests.length, 0);
    const answer = await say(h, tgUpdate({ from: PAT, text: "good morning" }));
    assert.match(answer, /echo: good morning/);
    const main = await h.sessionStatus("agent:main:main");
    assert.ok(main.messageCount >= 2, "their DMs are the main session");
    const late = await say(h, tgUpdate({ from: EVE, text: `/claim ${people.claim}` }));
    assert.match(late, /owner already/);
    const after = (await (await h.fetch("/api/agents/main/people", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).list;
    assert.equal(after.claim, undefined, "no claim code once there is an owner");
    assert.deepEqual(after.owners.map((o) => [o.who, o.via]), [["telegram:626262", "claim"]]);
    assert.equal(after.events[0].action, "claimed");
  });
});
