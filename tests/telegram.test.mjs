// End to end: Telegram webhook → Session object → LLM → Telegram reply, in
// workerd, against stand-ins that record what Hearth sent them.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, SECRET, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";
import { jpegBytes, photoUpdate, serveFile, userBlocks } from "./support/media.mjs";

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

  test("an edited message after the reply starts no second turn and fetches nothing", async () => {
    const original = tgUpdate({ text: "what is 2+2?" });
    await h.sendUpdate(original);
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
    const fileId = serveFile(h, jpegBytes(2000));
    const edit = tgUpdate({
      edited: true,
      text: undefined,
      extra: { message_id: original.message.message_id, edit_date: Math.floor(Date.now() / 1000), caption: "what is 2+3?",
        photo: [{ file_id: fileId, file_unique_id: "u" + fileId, file_size: 2000, width: 64, height: 64 }] },
    });
    const r = await h.sendUpdate(edit);
    assert.equal(r.status, 200);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(h.llm.requests.length, 1, "no second LLM request");
    assert.equal(sentTo(OWNER).length, 1, "no second answer");
    assert.equal(h.telegram.calls("getFile").length, 0, "the edit's media is not downloaded");
  });

  test("an edit of a message still waiting in the queue changes nothing: it is answered once, as sent", async () => {
    h.llm.state.defaultDelayMs = 300;
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "first" }));
    const second = tgUpdate({ from: FRIEND, text: "second" });
    await h.sendUpdate(second);
    await h.sendUpdate(tgUpdate({ from: FRIEND, edited: true, text: "second, edited", extra: { message_id: second.message.message_id } }));
    await h.until(() => sentTo(FRIEND).length === 2, { what: "two replies" });
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(sentTo(FRIEND).map((m) => m.body.text), ["echo: first", "echo: second"]);
    assert.equal(h.llm.requests.length, 2);
  });

  test("forum topics get their own session and replies stay in the topic", async () => {
    const u = tgUpdate({ from: FRIEND, chat: GROUP, threadId: 77, text: "/ask hi", entities: [{ type: "bot_command", offset: 0, length: 4 }] });
    await h.sendUpdate(u);
    await h.until(() => sentTo(GROUP).length === 1, { what: "topic reply" });
    assert.equal(sentTo(GROUP)[0].body.message_thread_id, 77);
    assert.match(systemText(h.llm.requests[0]), /telegram:group:-100123456:topic:77/);
  });
});

// The quick start's first contact: `.dev.vars.example` ships OWNER_IDS empty,
// the owner writes once and is told the id to put there. Also: nothing about
// the configuration answers a caller without the webhook secret.
describe("first contact, with no owner configured", () => {
  let f;
  before(async () => {
    f = await startHearth({
      bindings: { OWNER_IDS: "", ALLOW_FROM: "", AGENTS: "main,broken", LLM_PROVIDER__BROKEN: "gemini" },
    });
  });
  after(() => f.close());

  test("a DM is told its id and what to set, and makes no LLM request", async () => {
    const r = await f.sendUpdate(tgUpdate({ from: OWNER, text: "hi, are you mine?" }));
    assert.equal(r.status, 200);
    await f.until(() => f.telegram.sent().length === 1, { what: "first-contact reply" });
    const text = f.telegram.sent()[0].body.text;
    assert.equal(Number(f.telegram.sent()[0].body.chat_id), OWNER);
    assert.match(text, new RegExp(`Your id is telegram:${OWNER}`));
    assert.match(text, new RegExp(`OWNER_IDS=telegram:${OWNER}`));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(f.llm.requests.length, 0);
  });

  test("the secret is checked before the configuration: no agent ids or config errors for strangers", async () => {
    const broken = await f.sendUpdate(tgUpdate({ text: "x" }), { agent: "broken", secret: "wrong" });
    assert.equal(broken.status, 401, "a broken config does not answer an unauthenticated caller");
    const brokenAuthed = await f.sendUpdate(tgUpdate({ text: "x" }), { agent: "broken" });
    assert.equal(brokenAuthed.status, 500);
    assert.match(await brokenAuthed.text(), /LLM_PROVIDER/, "the authenticated caller learns what to fix");
    const unknown = await f.sendUpdate(tgUpdate({ text: "x" }), { agent: "nobody", secret: "wrong" });
    assert.equal(unknown.status, 401, "an unknown agent does not tell itself apart without the secret");
    const unknownAuthed = await f.sendUpdate(tgUpdate({ text: "x" }), { agent: "nobody", secret: SECRET });
    assert.equal(unknownAuthed.status, 404);
    const body = await unknownAuthed.text();
    assert.ok(!/main|broken/.test(body), `404 lists agent ids: ${body}`);
    assert.equal(f.llm.requests.length, 0);
  });
});

// The OpenAI-compatible provider end to end: the stand-in rejects (400) any
// body the real chat-completions API would reject (see chatCompletionsProblem).
describe("OpenAI-compatible provider", () => {
  let o;
  before(async () => {
    o = await startHearth({
      bindings: ({ llm }) => ({ LLM_PROVIDER: "openai", LLM_BASE_URL: `${llm.base}/v1`, LLM_MODEL: "gpt-test" }),
    });
    await o.putFile("agents/main/SOUL.md", "# Soul\nI am Ember.");
    await o.putFile("agents/main/TOOLS.md", "TOOL-NOTES-FOR-OPENAI");
  });
  after(() => o.close());
  beforeEach(() => o.reset());
  const replies = () => o.telegram.sent().filter((r) => Number(r.body.chat_id) === OWNER);
  const valid = () => o.llm.requests.forEach((r, n) => assert.equal(r.invalid, undefined, `request ${n}: ${r.invalid}`));

  test("a DM is answered; the request is chat completions with the system message first and the user's text", async () => {
    await o.sendUpdate(tgUpdate({ text: "hello openai" }));
    await o.until(() => replies().length === 1, { what: "reply" });
    valid();
    assert.equal(replies()[0].body.text, "echo: hello openai");
    const req = o.llm.requests[0];
    assert.equal(req.path, "/v1/chat/completions");
    assert.equal(req.headers.authorization, "Bearer test-llm-key");
    assert.equal(req.body.model, "gpt-test");
    const [system, ...rest] = req.body.messages;
    assert.equal(system.role, "system");
    assert.match(system.content, /## Your Soul[\s\S]*I am Ember/);
    assert.ok(rest.every((m) => m.role !== "system"), "one system message, first");
    const user = rest.at(-1);
    assert.equal(user.role, "user");
    assert.ok(userBlocks(req).some((b) => b.type === "text" && b.text === "hello openai"), JSON.stringify(user));
    assert.ok(req.body.tools.some((t) => t.type === "function" && t.function.name === "read_file"));
  });

  test("a read_file round goes through tool_calls and a tool message", async () => {
    o.llm.push({ toolCall: { name: "read_file", input: { path: "TOOLS.md" } } }, { text: "read it" });
    await o.sendUpdate(tgUpdate({ text: "read your tool notes" }));
    await o.until(() => replies().length === 1, { what: "reply" });
    valid();
    assert.equal(o.llm.requests.length, 2);
    const msgs = o.llm.requests[1].body.messages;
    const [call, result] = msgs.slice(-2);
    assert.equal(call.role, "assistant");
    assert.equal(call.tool_calls[0].function.name, "read_file");
    assert.deepEqual(JSON.parse(call.tool_calls[0].function.arguments), { path: "TOOLS.md" });
    assert.equal(result.role, "tool");
    assert.equal(result.tool_call_id, call.tool_calls[0].id);
    assert.match(result.content, /TOOL-NOTES-FOR-OPENAI/);
    assert.equal(replies()[0].body.text, "read it");
  });

  test("a 500 then success gives exactly one reply", async () => {
    o.llm.push({ status: 500 });
    await o.sendUpdate(tgUpdate({ text: "flaky openai?" }));
    await o.until(() => replies().length === 1, { what: "reply" });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(o.llm.requests.length, 2);
    assert.equal(replies().length, 1);
    assert.equal(replies()[0].body.text, "echo: flaky openai?");
  });

  test("a photo reaches the model as an image_url data URL of its exact bytes", async () => {
    const bytes = jpegBytes(5000);
    const id = serveFile(o, bytes);
    await o.sendUpdate(photoUpdate(id, bytes.length, { caption: "what is this?" }));
    await o.until(() => replies().length === 1, { what: "reply" });
    valid();
    const image = userBlocks(o.llm.requests.at(-1)).find((b) => b.type === "image_url");
    assert.ok(image, "an image_url part");
    const [, mime, data] = image.image_url.url.match(/^data:([^;]+);base64,(.*)$/);
    assert.equal(mime, "image/jpeg");
    assert.ok(Buffer.from(data, "base64").equals(bytes), "the model sees the exact bytes");
  });

  test("an empty model reply does not make the next request invalid", async () => {
    o.llm.push({ text: "" });
    await o.sendUpdate(tgUpdate({ text: "say nothing" }));
    await o.until(() => replies().length === 1, { what: "placeholder reply" });
    await o.sendUpdate(tgUpdate({ text: "still there?" }));
    await o.until(() => replies().length === 2, { what: "second reply" });
    valid();
    assert.equal(replies()[1].body.text, "echo: still there?");
  });
});
