// End to end: Telegram webhook → Session object → LLM → Telegram reply, in
// workerd, against stand-ins that record what Hearth sent them.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, systemText, tgUpdate } from "./helpers/hearth.mjs";

let h;
before(async () => {
  h = await startHearth();
  await h.putFile("agents/main/SOUL.md", "# Soul\nI am Ember, warm and brief.");
  await h.putFile("agents/main/IDENTITY.md", "- **Name:** Ember\n- **Emoji:** 🔥");
  await h.putFile("agents/main/USER.md", "Olga likes tea. PRIVATE-USER-FACT");
  await h.putFile("agents/main/AGENTS.md", "Answer in one paragraph.");
  await h.putFile("agents/main/MEMORY.md", "- Olga's cat is Miso. PRIVATE-MEMORY-FACT");
  await h.putFile("agents/main/TOOLS.md", "read_file reads workspace files.");
});
after(() => h.close());
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);

describe("telegram webhook", () => {
  test("GET /health answers", async () => {
    const r = await h.fetch("/health");
    assert.equal(r.status, 200);
    assert.equal((await r.json()).ok, true);
  });

  test("a DM from the owner gets a reply whose LLM request carries the workspace in order", async () => {
    const res = await h.sendUpdate(tgUpdate({ text: "hello there" }));
    assert.equal(res.status, 200);
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    assert.equal(h.llm.requests.length, 1);
    const req = h.llm.requests[0];
    assert.equal(req.headers["x-api-key"], "test-llm-key");
    assert.equal(req.headers["anthropic-version"], "2023-06-01");
    const system = systemText(req);
    const order = ["## Core", "## Your Soul", "## Your Identity", "## About Your Human", "## Operating Instructions",
      "## Long-Term Memory", "## Tool Notes", "## Runtime"];
    const positions = order.map((s) => system.indexOf(s));
    assert.ok(positions.every((p) => p >= 0), `missing section in:\n${system}`);
    assert.deepEqual([...positions].sort((a, b) => a - b), positions, "sections out of order");
    assert.match(system, /PRIVATE-MEMORY-FACT/);
    assert.equal(req.body.system[0].cache_control.type, "ephemeral");
    const reply = sentTo(OWNER)[0].body;
    assert.equal(reply.text, "echo: hello there");
    assert.equal(reply.parse_mode, "HTML");
    assert.ok(h.telegram.calls("sendChatAction").length >= 1, "typing action sent");
  });

  test("a group message without a mention gets no turn; a mention gets a threaded reply without private files", async () => {
    await h.sendUpdate(tgUpdate({ from: FRIEND, chat: GROUP, text: "just chatting" }));
    const mention = tgUpdate({ from: FRIEND, chat: GROUP, text: "@hearth_bot what's up?", entities: [{ type: "mention", offset: 0, length: 11 }] });
    const r = await h.sendUpdate(mention);
    assert.equal(r.status, 200);
    await h.until(() => sentTo(GROUP).length === 1, { what: "group reply" });
    assert.equal(h.llm.requests.length, 1, "only the mention reached the LLM");
    const body = h.llm.requests[0].raw;
    assert.ok(!body.includes("just chatting"));
    assert.ok(!body.includes("PRIVATE-MEMORY-FACT") && !body.includes("PRIVATE-USER-FACT"), "private files leaked to a group");
    assert.match(systemText(h.llm.requests[0]), /## Your Soul/);
    const reply = sentTo(GROUP)[0].body;
    assert.equal(reply.reply_parameters.message_id, mention.message.message_id);
  });

  test("a reply to the bot and a /command address it in a group", async () => {
    const replyTo = { message_id: 1, from: { id: h.telegram.botId, is_bot: true, first_name: "Hearth" }, chat: { id: GROUP, type: "supergroup" }, date: 1, text: "hi" };
    await h.sendUpdate(tgUpdate({ from: FRIEND, chat: GROUP, text: "thanks!", replyTo }));
    await h.sendUpdate(tgUpdate({ from: FRIEND, chat: GROUP, text: "/status", entities: [{ type: "bot_command", offset: 0, length: 7 }] }));
    await h.sendUpdate(tgUpdate({ from: FRIEND, chat: GROUP, text: "/status@other_bot", entities: [{ type: "bot_command", offset: 0, length: 17 }] }));
    await h.until(() => sentTo(GROUP).length === 2, { what: "two group replies" });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(h.llm.requests.length, 2);
  });

  test("a wrong or missing secret is 401 and starts no turn", async () => {
    const bad = await h.sendUpdate(tgUpdate({ text: "intruder" }), { secret: "nope" });
    assert.equal(bad.status, 401);
    const missing = await h.sendUpdate(tgUpdate({ text: "intruder" }), { secret: null });
    assert.equal(missing.status, 401);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(h.llm.requests.length, 0);
    assert.equal(h.telegram.sent().length, 0);
  });

  test("the same update delivered twice gives one reply", async () => {
    const u = tgUpdate({ text: "only once please" });
    const [a, b] = await Promise.all([h.sendUpdate(u), h.sendUpdate(u)]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    const again = await h.sendUpdate(u);
    assert.equal(again.status, 200);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sentTo(OWNER).length, 1);
    assert.equal(h.llm.requests.length, 1);
  });

  test("five messages at once give five turns, in order, never overlapping", async () => {
    h.llm.state.defaultDelayMs = 60;
    const updates = [1, 2, 3, 4, 5].map((i) => tgUpdate({ from: FRIEND, text: `message ${i}` }));
    const responses = await Promise.all(updates.map((u) => h.sendUpdate(u)));
    assert.ok(responses.every((r) => r.status === 200));
    await h.until(() => sentTo(FRIEND).length === 5, { what: "five replies", timeoutMs: 15000 });
    assert.deepEqual(sentTo(FRIEND).map((r) => r.body.text), [1, 2, 3, 4, 5].map((i) => `echo: message ${i}`));
    assert.equal(h.llm.state.maxInFlight, 1, "turns overlapped");
    for (let i = 1; i < h.llm.requests.length; i++) {
      assert.ok(h.llm.requests[i].start >= h.llm.requests[i - 1].end, "a turn started before the previous ended");
    }
    // Each turn sees the earlier ones in its history.
    const last = h.llm.requests[4].body.messages;
    assert.equal(last.filter((m) => m.role === "assistant").length, 4);
  });

  test("an LLM 500 then success gives exactly one reply", async () => {
    h.llm.push({ status: 500 });
    await h.sendUpdate(tgUpdate({ text: "flaky?" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(h.llm.requests.length, 2);
    assert.equal(sentTo(OWNER).length, 1);
    assert.equal(sentTo(OWNER)[0].body.text, "echo: flaky?");
  });

  test("a 429 with retry-after is honoured", async () => {
    h.llm.push({ status: 429, headers: { "retry-after": "1" } });
    await h.sendUpdate(tgUpdate({ text: "rate limited" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    const [first, second] = h.llm.requests;
    assert.ok(second.start - first.end >= 950, `retried after ${second.start - first.end} ms`);
  });

  test("an LLM that keeps failing tells the user and keeps the message", async () => {
    for (let i = 0; i < 4; i++) h.llm.push({ status: 529 });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "please remember this" }));
    await h.until(() => sentTo(FRIEND).length === 1, { what: "error message" });
    assert.equal(h.llm.requests.length, 4);
    assert.match(sentTo(FRIEND)[0].body.text, /saved/);
    // The next turn still carries the message that failed.
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "are you back?" }));
    await h.until(() => sentTo(FRIEND).length === 2, { what: "second reply" });
    const raw = h.llm.requests[4].raw;
    assert.ok(raw.includes("please remember this"), "failed message lost from history");
  });

  test("a malformed body is 400 and the next request still works", async () => {
    for (const raw of ["{not json", "[]", '{"update_id":"x"}', "", '{"update_id":1,"message":{"chat":{}}}']) {
      const r = await h.sendUpdate(null, { raw });
      assert.equal(r.status, 400, `body ${JSON.stringify(raw)}`);
    }
    await h.sendUpdate(tgUpdate({ text: "still alive?" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply after bad input" });
  });

  test("updates that are not messages are acknowledged and ignored", async () => {
    const r = await h.sendUpdate({ update_id: 5, callback_query: { id: "1", from: { id: OWNER, is_bot: false, first_name: "O" }, data: "x" } });
    assert.equal(r.status, 200);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(h.llm.requests.length, 0);
  });

  test("a stranger causes no LLM request and is told their id", async () => {
    const stranger = 31337;
    const r = await h.sendUpdate(tgUpdate({ from: stranger, text: "let me in" }));
    assert.equal(r.status, 200);
    await h.until(() => sentTo(stranger).length === 1, { what: "stranger notice" });
    assert.match(sentTo(stranger)[0].body.text, /telegram:31337/);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(h.llm.requests.length, 0);
  });

  test("an unknown agent is 404", async () => {
    const r = await h.sendUpdate(tgUpdate({ text: "hi" }), { agent: "nobody" });
    assert.equal(r.status, 404);
  });

  test("a long reply is split at 4096 characters on paragraph boundaries", async () => {
    const para = "lorem ipsum ".repeat(150).trim(); // ~1800 chars
    h.llm.push({ text: [para, para, para, para].join("\n\n") });
    await h.sendUpdate(tgUpdate({ text: "write a lot" }));
    await h.until(() => sentTo(OWNER).length === 2, { what: "two chunks" });
    const texts = sentTo(OWNER).map((r) => r.body.text);
    assert.ok(texts.every((t) => t.length <= 4096));
    assert.equal(texts.join("\n\n"), [para, para, para, para].join("\n\n"));
  });

  test("markup Telegram rejects is resent as plain text", async () => {
    h.telegram.fail("sendMessage", 400, { ok: false, error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0" });
    h.llm.push({ text: "**bold** and <x>" });
    await h.sendUpdate(tgUpdate({ text: "format" }));
    await h.until(() => sentTo(OWNER).length === 2, { what: "plain resend" });
    const [html, plain] = sentTo(OWNER);
    assert.equal(html.body.parse_mode, "HTML");
    assert.equal(plain.body.parse_mode, undefined);
    assert.equal(plain.body.text, "**bold** and <x>");
  });

  test("Telegram's 429 retry_after is honoured when replying", async () => {
    h.telegram.fail("sendMessage", 429, { ok: false, error_code: 429, description: "Too Many Requests: retry after 1", parameters: { retry_after: 1 } });
    await h.sendUpdate(tgUpdate({ text: "slow down" }));
    await h.until(() => sentTo(OWNER).length === 2, { what: "retried send" });
    const [first, second] = sentTo(OWNER);
    assert.ok(second.at - first.at >= 950, `resent after ${second.at - first.at} ms`);
    assert.equal(second.body.text, "echo: slow down");
  });

  test("the read_file tool reads a workspace file, and traversal is refused", async () => {
    h.llm.push({ toolCall: { name: "read_file", input: { path: "TOOLS.md" } } }, { toolCall: { name: "read_file", input: { path: "../other/SOUL.md" } } }, { text: "done reading" });
    await h.sendUpdate(tgUpdate({ text: "read your tools" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    assert.equal(h.llm.requests.length, 3);
    const msgs = h.llm.requests[1].body.messages;
    const result = msgs[msgs.length - 1].content.find((b) => b.type === "tool_result");
    assert.match(result.content, /read_file reads workspace files/);
    const msgs2 = h.llm.requests[2].body.messages;
    const refused = msgs2[msgs2.length - 1].content.find((b) => b.type === "tool_result");
    assert.equal(refused.is_error, true);
    assert.equal(sentTo(OWNER)[0].body.text, "done reading");
  });

  test("forum topics get their own session and replies stay in the topic", async () => {
    const u = tgUpdate({ from: FRIEND, chat: GROUP, threadId: 77, text: "/ask hi", entities: [{ type: "bot_command", offset: 0, length: 4 }] });
    await h.sendUpdate(u);
    await h.until(() => sentTo(GROUP).length === 1, { what: "topic reply" });
    assert.equal(sentTo(GROUP)[0].body.message_thread_id, 77);
    assert.match(systemText(h.llm.requests[0]), /telegram:group:-100123456:topic:77/);
  });
});
