// End to end: the runtime posts into a session's chat later (the primitive
// reminders and background tasks deliver through), in workerd: a text said
// as it is (outbox → Telegram stand-in, history, no LLM call) or a turn
// whose prompt is the text; once per id; a group keeps its group scope.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { GROUP, OWNER, startHearth, systemText, telegramTurn, tgUpdate } from "./support/hearth.mjs";

const MAIN = "agent:main:main";
const GROUP_KEY = `agent:main:telegram:group:${GROUP}`;

let h;
before(async () => {
  h = await startHearth();
  await h.putFile("agents/main/MEMORY.md", "- Olga's locker code is 4471 PRIVATE-POST-FACT");
});
after(() => h.close());
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => r.method === "sendMessage" && Number(r.body.chat_id) === chatId);

/** POST /post to a Session object, as an Agent object (or any runtime code) does. */
async function post(body) {
  const ns = await h.mf.getDurableObjectNamespace("SESSION");
  const res = await ns.get(ns.idFromName(body.sessionKey)).fetch("https://session/post", { method: "POST", body: JSON.stringify(body) });
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}

describe("posting into a chat later", () => {
  test("a said post arrives once in the chat the owner wrote from, joins the history, costs no LLM call", async () => {
    h.llm.push({ text: "hello Olga" });
    await telegramTurn(h, tgUpdate({ text: "hi" }), OWNER);
    const calls = h.llm.requests.length;
    const body = { sessionKey: MAIN, id: "e2e:say:1", mode: "say", text: "⏰ Water the plants" };
    const first = await post(body);
    assert.equal(first.status, 200, first.body);
    assert.equal(first.body.queued, true);
    assert.equal(first.body.target.chat_id, String(OWNER));
    await h.until(() => sentTo(OWNER).some((r) => r.body.text.includes("Water the plants")), { what: "the post in the chat" });
    // The same id again: nothing (a caller retrying a call that timed out).
    const again = await post(body);
    assert.deepEqual(again.body, { queued: false });
    await h.settle(MAIN);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sentTo(OWNER).filter((r) => r.body.text.includes("Water the plants")).length, 1, "once");
    assert.equal(h.llm.requests.length, calls, "no LLM call");
    const status = await h.sessionStatus(MAIN);
    const last = status.messages.at(-1);
    assert.equal(last.role, "assistant");
    assert.match(JSON.stringify(last.content), /Water the plants/);
  });

  test("a turn post runs its prompt in a group with the group's scope and answers there", async () => {
    h.llm.push({ text: "Bring an umbrella, it will rain at 5." });
    const target = { channel: "telegram", chat_id: String(GROUP) };
    const res = await post({ sessionKey: GROUP_KEY, id: "e2e:turn:1", mode: "turn", text: "Check the weather and tell the group if they need an umbrella", target });
    assert.equal(res.status, 200, res.body);
    await h.until(() => sentTo(GROUP).length === 1, { what: "the turn's answer in the group" });
    assert.equal(sentTo(GROUP)[0].body.text, "Bring an umbrella, it will rain at 5.");
    assert.equal(h.llm.requests.length, 1);
    const req = h.llm.requests[0];
    assert.match(JSON.stringify(req.body.messages), /Check the weather/);
    assert.ok(!systemText(req).includes("PRIVATE-POST-FACT") && !req.raw.includes("PRIVATE-POST-FACT"), "a group never sees the owner's memory");
  });

  test("a post that names no chat in a session nobody wrote in, or has no text, is refused (400) and queues nothing", async () => {
    const key = "agent:main:telegram:dm:31337";
    const none = await post({ sessionKey: key, id: "x", mode: "say", text: "hi" });
    assert.equal(none.status, 400);
    assert.match(none.body, /name the target/);
    const empty = await post({ sessionKey: key, id: "y", mode: "say", text: " ", target: { channel: "telegram", chat_id: "31337" } });
    assert.equal(empty.status, 400);
    assert.equal((await h.sessionStatus(key)).open, 0);
  });
});
