// End to end: the HTTP API (generate, stream, threads, notifications) in
// workerd, against the streaming LLM stand-in.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { sseReader } from "./support/sse.mjs";

const ADMIN = "test-admin-token";
const SITE = "site-token-0123456789";
const PHONE = "phone-token-0123456789";
const OTHER = "other-token-0123456789";

let h;
before(async () => {
  h = await startHearth({
    bindings: {
      AGENTS: "main,work",
      ADMIN_TOKEN: ADMIN,
      API_TOKENS: `site:${SITE}:main,phone:${PHONE}:*:owner,other:${OTHER}:work`,
    },
  });
});
after(() => h.close());
beforeEach(() => h.reset());

const auth = (token) => ({ authorization: `Bearer ${token}` });
const ask = (text, extra = {}) => JSON.stringify({ messages: [{ role: "user", content: text }], ...extra });

function post(path, body, { token = ADMIN, headers = {} } = {}) {
  return h.fetch(path, { method: "POST", headers: { "content-type": "application/json", ...auth(token), ...headers }, body });
}

async function generate(text, extra = {}, opts = {}) {
  const r = await post("/api/agents/main/generate", ask(text, extra), opts);
  return { status: r.status, headers: r.headers, body: await r.json() };
}

function stream(text, extra = {}, opts = {}) {
  return post("/api/agents/main/stream", ask(text, extra), opts);
}

const lastUser = (req) => {
  const m = req.body.messages.filter((m) => m.role === "user").pop();
  return JSON.stringify(m.content);
};

describe("generate", () => {
  test("answers with the text, a new thread id and the usage, and the thread keeps the conversation", async () => {
    const first = await generate("hello there");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.text, "echo: hello there");
    assert.match(first.body.threadId, /^t-[0-9a-f]{24}$/);
    assert.equal(first.headers.get("x-thread-id"), first.body.threadId);
    // The provider's figures (the stand-in's, as Anthropic reports them), summed over the turn's calls.
    const u = h.llm.requests[0].usage;
    assert.deepEqual(first.body.usage, {
      promptTokens: u.input + u.cacheRead + u.cacheWrite,
      completionTokens: u.output,
      cacheReadTokens: u.cacheRead,
      cacheWriteTokens: u.cacheWrite,
    });
    assert.ok(first.body.usage.promptTokens > 0 && first.body.usage.completionTokens > 0);
    const second = await generate("and again", { threadId: first.body.threadId });
    assert.equal(second.body.text, "echo: and again");
    const status = await h.sessionStatus(`agent:main:api:${first.body.threadId}`);
    assert.equal(status.messageCount, 4, "both questions and answers are in the thread");
    assert.ok(JSON.stringify(h.llm.requests[1].body.messages).includes("hello there"), "the second call saw the first");
    assert.equal(h.telegram.sent().length, 0, "an API answer goes to no chat");
  });

  test("the thread main is the owner's main session, the same conversation as their Telegram DMs", async () => {
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "my locker code is 4711" }));
    await h.telegram.untilSent(1);
    const r = await generate("what is my locker code?", { threadId: "main" });
    assert.equal(r.status, 200);
    assert.ok(JSON.stringify(h.llm.requests[1].body.messages).includes("my locker code is 4711"));
    assert.equal(h.telegram.sent().length, 1, "the API answer is not echoed to Telegram");
    const phone = await generate("and now?", { threadId: "main" }, { token: PHONE });
    assert.equal(phone.status, 200, "a key marked owner reaches main");
  });

  test("a failing model is a 502 naming what happened, and the message stays in the thread", async () => {
    for (let i = 0; i < 4; i++) h.llm.push({ status: 529 });
    const r = await generate("are you there?", { threadId: "flaky" });
    assert.equal(r.status, 502);
    assert.match(r.body.message, /not answering/);
    assert.equal(r.body.threadId, "flaky");
    const status = await h.sessionStatus("agent:main:api:flaky");
    assert.equal(status.messageCount, 1);
  });
});

describe("stream", () => {
  test("deltas arrive as the model writes them, then done with the whole answer", async () => {
    h.llm.push({ text: "one two three four five", pieceDelayMs: 40 });
    const r = await stream("count", { threadId: "counting" });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type"), /^text\/event-stream/);
    const sse = sseReader(r);
    const firstDelta = await sse.until((e) => e.event === "delta");
    const done = await sse.until((e) => e.event === "done");
    assert.ok(done.at - firstDelta.at >= 100, "the first piece came before the last was written");
    assert.equal(sse.text(), "one two three four five");
    assert.deepEqual(Object.keys(done.json).sort(), ["text", "threadId", "usage"]);
    assert.equal(done.json.text, "one two three four five");
    assert.ok(sse.events.filter((e) => e.event === "delta").length >= 3);
    assert.ok(sse.events.filter((e) => e.event === "delta").every((e) => /^\d+-\d+-\d+$/.test(e.id)));
    assert.equal(h.llm.requests[0].body.stream, true);
    await sse.end();
  });

  test("a stream that breaks in the middle is retried and the client sees each piece once", async () => {
    h.llm.push({ text: "alpha beta gamma delta", pieceDelayMs: 20, breakAfter: 2 });
    h.llm.push({ text: "alpha beta gamma delta", pieceDelayMs: 5 });
    const sse = sseReader(await stream("go", { threadId: "broken" }));
    const done = await sse.until((e) => e.event === "done");
    assert.equal(sse.text(), "alpha beta gamma delta");
    assert.equal(done.json.text, "alpha beta gamma delta");
    assert.equal(h.llm.requests.length, 2);
  });

  test("an error event inside the provider's 200 is retried the same way", async () => {
    h.llm.push({ text: "first attempt breaks here", errorAfter: 2 });
    h.llm.push({ text: "second attempt says this" });
    const sse = sseReader(await stream("go", { threadId: "overloaded" }));
    const done = await sse.until((e) => e.event === "done");
    assert.equal(done.json.text, "second attempt says this");
    assert.equal(sse.text(), "second attempt says this", "the diverging retry replaced what was shown");
    assert.ok(sse.events.some((e) => e.event === "delta" && e.json.replace === true));
  });

  test("tool steps are told, and an OpenAI-compatible stream works the same", async () => {
    h.llm.push({ toolCall: { name: "who_am_i", input: {} } });
    h.llm.push({ text: "You are the owner." });
    const sse = sseReader(await stream("who am I?", { threadId: "tools" }));
    await sse.until((e) => e.event === "done");
    const tools = sse.events.filter((e) => e.event === "tool").map((e) => `${e.json.name} ${e.json.status}`);
    assert.deepEqual(tools, ["who_am_i running", "who_am_i done"]);
    assert.equal(sse.text(), "You are the owner.");
  });

  test("a client that disconnects does not cancel the turn; asking again with its key gets the rest only", async () => {
    h.llm.push({ text: "w1 w2 w3 w4 w5 w6 w7 w8", pieceDelayMs: 60 });
    const key = "resume-" + Date.now();
    const first = sseReader(await stream("long answer", { threadId: "resume" }, { headers: { "idempotency-key": key } }));
    await first.until((e) => e.event === "delta" && e.json.text.includes("w2"));
    await first.cancel();
    const seen = first.events.filter((e) => e.event === "delta").at(-1);
    const again = sseReader(
      await stream("long answer", { threadId: "resume" }, { headers: { "idempotency-key": key, "last-event-id": seen.id } }),
    );
    const done = await again.until((e) => e.event === "done");
    assert.equal(first.text() + again.text(), "w1 w2 w3 w4 w5 w6 w7 w8", "nothing twice, nothing lost");
    assert.equal(done.json.text, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert.equal(h.llm.requests.length, 1, "one turn");
    // Later, the same key gets the answer at once, with no model call.
    const later = await generate("long answer", { threadId: "resume" }, { headers: { "idempotency-key": key } });
    assert.equal(later.body.text, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert.equal(later.headers.get("idempotency-key"), key);
    assert.equal(h.llm.requests.length, 1);
  });

  test("a client that goes away for good still leaves the answer in the thread", async () => {
    h.llm.push({ text: "kept even if nobody reads it", pieceDelayMs: 30 });
    const sse = sseReader(await stream("remember this", { threadId: "gone" }));
    await sse.until((e) => e.event === "delta");
    await sse.cancel();
    await h.until(async () => (await h.sessionStatus("agent:main:api:gone")).messageCount === 2, { what: "the answer stored" });
    const status = await h.sessionStatus("agent:main:api:gone");
    assert.equal(status.messages[1].content[0].text, "kept even if nobody reads it");
  });
});

describe("one queue per thread", () => {
  test("two requests on one thread are answered one after the other, each with its own answer", async () => {
    h.llm.state.defaultDelayMs = 150;
    const [a, b] = await Promise.all([generate("first", { threadId: "q" }), generate("second", { threadId: "q" })]);
    assert.equal(a.body.text, "echo: first");
    assert.equal(b.body.text, "echo: second");
    assert.equal(h.llm.state.maxInFlight, 1, "one turn at a time");
  });

  test("the same Idempotency-Key twice at once is one turn", async () => {
    h.llm.state.defaultDelayMs = 100;
    const headers = { "idempotency-key": "twice-" + Date.now() };
    const [a, b] = await Promise.all([generate("once", { threadId: "idem" }, { headers }), generate("once", { threadId: "idem" }, { headers })]);
    assert.equal(a.body.text, "echo: once");
    assert.deepEqual(b.body, a.body);
    assert.equal(h.llm.requests.length, 1);
  });
});

describe("who may do what", () => {
  test("a missing or wrong token is a 401, an unknown agent a 404", async () => {
    const none = await h.fetch("/api/agents/main/generate", { method: "POST", body: ask("x") });
    assert.equal(none.status, 401);
    assert.match((await none.json()).error, /bearer token/);
    assert.equal((await post("/api/agents/main/generate", ask("x"), { token: "nope" })).status, 401);
    const unknown = await post("/api/agents/ghost/generate", ask("x"));
    assert.equal(unknown.status, 404);
    assert.match((await unknown.json()).error, /unknown agent/);
    assert.equal((await post("/api/agents/work/generate", ask("x"), { token: SITE })).status, 404, "not the key's agent");
    assert.equal(h.llm.requests.length, 0);
  });

  test("a key that is not the owner's has threads of its own and never reaches main", async () => {
    const main = await generate("x", { threadId: "main" }, { token: SITE });
    assert.equal(main.status, 403);
    assert.match(main.body.error, /owner/);
    await generate("from the site", { threadId: "support" }, { token: SITE });
    await generate("from the owner", { threadId: "support" });
    const site = await h.sessionStatus("agent:main:api:key-site-support");
    const owner = await h.sessionStatus("agent:main:api:support");
    assert.equal(site.messages[0].content.at(-1).text, "from the site");
    assert.equal(owner.messages[0].content.at(-1).text, "from the owner");
    const sys = h.llm.requests[0].body.system.map((b) => b.text).join("\n");
    assert.ok(!sys.includes("MEMORY.md") || !sys.includes("PRIVATE"), "shared scope");
    const admin = await h.fetch("/api/agents/main/sessions", { headers: auth(SITE) });
    assert.equal(admin.status, 403, "admin routes need ADMIN_TOKEN");
    const agents = await h.fetch("/api/agents", { headers: auth(OTHER) });
    assert.deepEqual(await agents.json(), ["work"], "a key sees its agents only");
    // The MCP server lets the key in (its threads are its own: tests/mcp-server.test.mjs).
    const mcp = await h.fetch("/mcp/main", { method: "POST", headers: { ...auth(SITE), "content-type": "application/json" }, body: "{}" });
    assert.equal(mcp.status, 400, "past the credentials: a JSON-RPC error for the empty message");
    assert.equal((await mcp.json()).error.code, -32600);
  });

  test("bad input is a 400 or 413 naming the problem, never a 500", async () => {
    const cases = [
      ["{nope", 400, /not JSON/],
      [JSON.stringify({ messages: [] }), 400, /messages is empty/],
      [JSON.stringify({}), 400, /messages is missing/],
      [JSON.stringify({ messages: [{ role: "assistant", content: "x" }] }), 400, /only user messages/],
      [ask("x", { threadId: "no spaces" }), 400, /threadId/],
      [ask("x".repeat(600 * 1024)), 413, /limit/],
    ];
    for (const [body, status, says] of cases) {
      for (const route of ["generate", "stream"]) {
        const r = await post(`/api/agents/main/${route}`, body);
        assert.equal(r.status, status, `${route} ${body.slice(0, 40)}`);
        assert.match(await r.text(), says);
      }
    }
    const idem = await post("/api/agents/main/generate", ask("x"), { headers: { "idempotency-key": "a b" } });
    assert.equal(idem.status, 400);
    const wrongMethod = await h.fetch("/api/agents/main/generate", { headers: auth(ADMIN) });
    assert.equal(wrongMethod.status, 405);
    assert.equal(h.llm.requests.length, 0);
  });
});

describe("threads", () => {
  test("create, list, and each key sees its own", async () => {
    const created = await post("/api/agents/main/memory/threads", JSON.stringify({ threadId: "plans", title: "Trip plans" }));
    assert.equal(created.status, 201);
    const body = await created.json();
    assert.deepEqual([body.id, body.title, typeof body.createdAt], ["plans", "Trip plans", "number"]);
    const again = await post("/api/agents/main/memory/threads", JSON.stringify({ threadId: "plans" }));
    assert.equal(again.status, 409);
    const fresh = await post("/api/agents/main/memory/threads", "");
    assert.equal(fresh.status, 201);
    assert.match((await fresh.json()).id, /^t-/);
    await generate("hi", { threadId: "site-thread" }, { token: SITE });
    const list = async (token) => (await (await h.fetch("/api/agents/main/memory/threads", { headers: auth(token) })).json()).map((t) => t.id);
    const admin = await list(ADMIN);
    assert.ok(admin.includes("plans") && admin.includes("key-site-site-thread"), JSON.stringify(admin));
    const site = await list(SITE);
    assert.ok(site.includes("site-thread"), JSON.stringify(site));
    assert.ok(!site.includes("plans") && !site.includes("main") && site.every((t) => !t.startsWith("key-")), "a key lists its own threads only");
    const titled = (await (await h.fetch("/api/agents/main/memory/threads", { headers: auth(ADMIN) })).json()).find((t) => t.id === "plans");
    assert.equal(titled.title, "Trip plans");
  });
});

describe("notifications", () => {
  test("a heartbeat finding reaches the stream, and a client that reconnects gets what it missed", async () => {
    const r = await h.fetch("/api/agents/main/notifications/stream", { headers: auth(ADMIN) });
    assert.equal(r.status, 200);
    const live = sseReader(r);
    await h.putFile("agents/main/HEARTBEAT.md", "- [ ] Check the backups\n");
    h.llm.push({ text: "The backup failed last night." });
    const worker = await h.mf.getWorker();
    await worker.scheduled({ scheduledTime: Date.now(), cron: "*/5 * * * *" });
    const note = await live.until((e) => e.event === "notification");
    assert.equal(note.json.text, "The backup failed last night.");
    assert.equal(note.json.source, "heartbeat");
    await live.cancel();
    const back = sseReader(await h.fetch("/api/agents/main/notifications/stream", { headers: { ...auth(PHONE), "last-event-id": "0" } }));
    const replayed = await back.until((e) => e.event === "notification");
    assert.equal(replayed.id, note.id);
    await back.cancel();
    assert.equal((await h.fetch("/api/agents/main/notifications/stream", { headers: auth(SITE) })).status, 403);
    const bad = await h.fetch("/api/agents/main/notifications/stream", { headers: { ...auth(ADMIN), "last-event-id": "x" } });
    assert.equal(bad.status, 400);
  });
});

describe("a stream that has nothing to say yet", () => {
  let quiet;
  before(async () => {
    quiet = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, STREAM_KEEPALIVE_MS: "200" } });
  });
  after(() => quiet.close());

  test("gets keep-alive comments while the model is silent, then its events as usual", async () => {
    quiet.llm.push({ text: "Finally, the answer.", delayMs: 1500 });
    const r = await quiet.fetch("/api/agents/main/stream", {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(ADMIN) },
      body: ask("take your time", { threadId: "slow" }),
    });
    assert.equal(r.status, 200);
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let raw = "";
    while (!raw.includes("event: done")) {
      const { value, done } = await reader.read();
      if (done) break;
      raw += decoder.decode(value, { stream: true });
    }
    const blocks = raw.split("\n\n").filter(Boolean);
    const first = blocks.findIndex((b) => !b.startsWith(":"));
    const silent = blocks.slice(0, first);
    assert.ok(silent.length >= 3, `a comment every 200 ms of the 1.5 s the model was silent: ${JSON.stringify(raw.slice(0, 300))}`);
    assert.ok(silent.every((b) => b === ": keep-alive"), "nothing but comments before the first event");
    assert.match(blocks[first], /event: delta/);
    // The events themselves are untouched (an SSE parser skips the comments).
    const events = blocks.filter((b) => !b.startsWith(":"));
    const done = events.find((b) => b.includes("event: done"));
    assert.match(done, /"text":"Finally, the answer\."/);
  });
});
