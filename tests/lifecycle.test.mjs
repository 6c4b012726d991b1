// Session lifecycle end to end: /reset archives to R2 as gzipped JSONL and
// starts fresh, a failing archive loses nothing, compaction keeps long
// conversations inside the context window, and the admin API sees it all.
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "admin-secret";
const AUTH = { headers: { authorization: `Bearer ${ADMIN}` } };
const lastText = (body) => {
  const m = body.messages[body.messages.length - 1];
  return typeof m.content === "string" ? m.content : m.content.map((b) => b.text || "").join("\n");
};
const isExtraction = (body) => lastText(body).includes("about to be archived");
const isCompaction = (body) => lastText(body).includes("being compacted");

async function talk(h, from, text) {
  const before = h.telegram.sent().filter((r) => Number(r.body.chat_id) === from).length;
  const r = await h.sendUpdate(tgUpdate({ from, text }));
  assert.equal(r.status, 200);
  await h.until(() => h.telegram.sent().filter((r) => Number(r.body.chat_id) === from).length > before, { what: `reply to ${text.slice(0, 20)}` });
  return h.telegram.sent().filter((r) => Number(r.body.chat_id) === from).at(-1).body.text;
}

async function readArchive(h, key) {
  const obj = await (await h.bucket()).get(key);
  assert.ok(obj, `no object ${key}`);
  const bytes = Buffer.from(await obj.arrayBuffer());
  const lines = gunzipSync(bytes).toString("utf8").trim().split("\n");
  return { obj, messages: lines.map((l) => JSON.parse(l)) };
}

async function listKeys(h, prefix) {
  return (await (await h.bucket()).list({ prefix })).objects.map((o) => o.key);
}

describe("reset", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, TIMEZONE: "Europe/Paris" } });
  });
  after(() => h.close());
  beforeEach(() => h.reset());

  test("/reset writes an archive that gunzip and JSON read back message for message, with exact metadata", async () => {
    await talk(h, OWNER, "my birthday is May 3");
    await talk(h, OWNER, "and I like green tea");
    await (await h.bucket()).put("media/agent:main:main/photo.jpg", "jpegbytes");
    const status = await (await h.fetch("/api/agents/main/sessions/agent:main:main", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const sessionId = status.sessionId;
    assert.ok(sessionId);
    assert.equal(status.messageCount, 4);
    h.llm.state.responder = (body) => (isExtraction(body) ? { text: "- Olga's birthday is May 3\n- Olga likes green tea" } : null);
    const reply = await talk(h, OWNER, "/reset");
    assert.match(reply, /archived our conversation \(4 messages\) and noted 2 things/);

    const key = `agents/main/sessions/${sessionId}.jsonl.gz`;
    const { obj, messages } = await readArchive(h, key);
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
    assert.deepEqual(messages, status.messages, "archive equals the live history");
    assert.match(JSON.stringify(messages[0].content), /my birthday is May 3/);
    assert.equal(messages[1].content[0].text, "echo: my birthday is May 3");
    assert.ok(messages.every((m) => Number.isInteger(m.timestamp) && m.timestamp > 1.7e12));
    const meta = obj.customMetadata;
    assert.equal(meta.sessionKey, "agent:main:main");
    assert.equal(meta.sessionId, sessionId);
    assert.equal(meta.agentId, "main");
    assert.equal(meta.messageCount, "4");
    assert.ok(Math.abs(Number(meta.archivedAt) - Date.now()) < 60_000);
    // The two turns' tokens as the stand-in reported them (the extraction came after the archive).
    const turns = h.llm.requests.slice(0, 2).map((r) => r.usage);
    const sum = (f) => String(turns.reduce((n, u) => n + f(u), 0));
    assert.equal(meta.inputTokens, sum((u) => u.input + u.cacheRead + u.cacheWrite));
    assert.equal(meta.outputTokens, sum((u) => u.output));
    assert.equal(meta.totalTokens, sum((u) => u.input + u.output + u.cacheRead + u.cacheWrite));

    // Memories land in the daily note of the last activity (Paris date).
    const date = new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Paris" }).format(new Date());
    const note = await (await (await h.bucket()).get(`agents/main/memory/${date}.md`)).text();
    assert.match(note, /### Extracted before reset \(\d\d:\d\d\)\n- Olga's birthday is May 3\n- Olga likes green tea/);
    // The admin API reads the archive back, decoded, with its metadata.
    const viaApi = await (await h.fetch(`/api/agents/main/archives/${sessionId}`, AUTH)).json();
    assert.deepEqual(viaApi.messages, messages);
    assert.deepEqual(viaApi.metadata, meta);
    assert.equal((await h.fetch(`/api/agents/main/archives/no-such-session`, AUTH)).status, 404);
    assert.equal((await h.fetch(`/api/agents/main/archives/${sessionId}`)).status, 401);
    // Media under the session prefix is gone; the next message starts a new session.
    assert.deepEqual(await listKeys(h, "media/agent:main:main/"), []);
    h.llm.state.responder = null;
    await talk(h, OWNER, "hello again");
    const fresh = h.llm.requests.at(-1).body.messages;
    assert.equal(fresh.length, 1, "the new session starts empty");
  });

  test("session_logs lists, searches and reads the archives and the live session", async () => {
    h.llm.push(
      { toolCall: { name: "session_logs", input: { action: "list_sessions" } } },
      { toolCall: { name: "session_logs", input: { action: "search", query: "GREEN TEA" } } },
      { toolCall: { name: "session_logs", input: { action: "recent", limit: 1 } } },
      { text: "looked" },
    );
    await talk(h, OWNER, "what did we say before?");
    const results = h.llm.requests.slice(-3).map((r) => JSON.parse(r.body.messages.at(-1).content.find((b) => b.type === "tool_result").content));
    const archived = results[0].sessions.filter((s) => !s.live);
    assert.equal(archived.length, 1, JSON.stringify(results[0]));
    assert.equal(results[0].sessions[0].live, true);
    // Ranked by the conversation memory: what was said, with its session.
    assert.ok(results[1].hits.some((hit) => hit.session === archived[0].session_id && /green tea/i.test(`${hit.said} ${hit.reply ?? ""}`)), JSON.stringify(results[1]));
    assert.equal(results[2].entries.length, 1);
    assert.equal(results[2].session_id, results[0].sessions[0].session_id);
  });

  test("the admin API lists sessions and resets one through its queue", async () => {
    await talk(h, FRIEND, "hi from a friend");
    const noAuth = await h.fetch("/api/agents/main/sessions");
    assert.equal(noAuth.status, 401);
    const list = await (await h.fetch("/api/agents/main/sessions", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    assert.ok(list.live.some((s) => s.sessionKey === "agent:main:telegram:dm:777"), JSON.stringify(list));
    assert.ok(list.archives.some((a) => a.metadata.sessionKey === "agent:main:main"), "earlier archive listed with metadata");
    const key = encodeURIComponent("agent:main:telegram:dm:777");
    const status = await (await h.fetch(`/api/agents/main/sessions/${key}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const r = await h.fetch(`/api/agents/main/sessions/${key}/reset`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 202);
    await h.until(async () => (await listKeys(h, `agents/main/sessions/${status.sessionId}`)).length === 1, { what: "admin reset archive" });
    const bad = await h.fetch(`/api/agents/main/sessions/agent:other:main`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(bad.status, 400);
  });

  test("a friend's reset keeps its memories out of the owner's daily note, in the friend's own memory", async () => {
    await talk(h, FRIEND, "my cat is called Miso");
    h.llm.state.responder = (body) =>
      isExtraction(body) ? { text: "## Summary\nPat talked about pets.\n## Memories\n- Pat's cat is called Miso" } : null;
    const reply = await talk(h, FRIEND, "/reset");
    assert.match(reply, /noted 1 things to remember/);
    const date = new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Paris" }).format(new Date());
    const note = await (await h.bucket()).get(`agents/main/memory/${date}.md`);
    assert.doesNotMatch(note ? await note.text() : "", /Miso/, "not in the owner's daily note");
    const agents = await h.mf.getDurableObjectNamespace("AGENT");
    const search = async (store) => {
      const r = await agents.get(agents.idFromName("main")).fetch("https://agent/memory/call", {
        method: "POST",
        body: JSON.stringify({ call: "search", store, query: "Miso cat", k: 5 }),
      });
      return (await r.json()).hits ?? [];
    };
    const hits = await search("dm:telegram:777");
    assert.equal(hits.length, 1, JSON.stringify(hits));
    assert.equal(hits[0].entry.kind, "archive");
    assert.match(hits[0].entry.content, /Pat talked about pets\.[\s\S]*- Pat's cat is called Miso/);
    assert.deepEqual(await search("main"), [], "nothing in the owner's store");
  });
});

describe("an R2 failure during reset", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { HEARTH_FAULT_R2_PUT_PREFIX: "agents/main/sessions/" } });
  });
  after(() => h.close());

  test("loses nothing: the user is told and the history is kept", async () => {
    await talk(h, OWNER, "do not forget this");
    const reply = await talk(h, OWNER, "/reset");
    assert.match(reply, /couldn't archive our conversation, so I kept it/);
    assert.deepEqual(await listKeys(h, "agents/main/sessions/"), []);
    await talk(h, OWNER, "still there?");
    assert.match(h.llm.requests.at(-1).raw, /do not forget this/);
  });
});

describe("compaction", () => {
  // Small enough that eight long questions overflow it, large enough for the
  // system prompt and every tool's schema (round four added remind, spawn_task, tasks).
  const WINDOW = 5000;
  let h;
  before(async () => {
    h = await startHearth({ bindings: { CONTEXT_WINDOW: String(WINDOW), CONTEXT_RESERVE: "200" } });
  });
  after(() => h.close());
  beforeEach(() => h.reset());

  test("a small context window triggers compaction and the next request starts from the summary", async () => {
    h.llm.state.responder = (body) =>
      isCompaction(body) ? { text: "## Summary\nOlga asked about ROMAN-HISTORY.\n## Memories\n- Olga studies Roman history" } : null;
    for (let i = 0; i < 8; i++) await talk(h, OWNER, `question ${i}: ${"tell me about Rome ".repeat(40)}`);
    const compactions = h.llm.requests.filter((r) => isCompaction(r.body));
    assert.ok(compactions.length >= 1, "no compaction happened");
    const parts = await listKeys(h, "agents/main/sessions/");
    assert.ok(parts.some((k) => /-part\d+\.jsonl\.gz$/.test(k)), `no part archive in ${parts}`);
    const part = await readArchive(h, parts.find((k) => k.includes("-part")));
    assert.equal(part.obj.customMetadata.sessionKey, "agent:main:main");
    assert.equal(part.obj.customMetadata.messageCount, String(part.messages.length));
    assert.equal(part.obj.customMetadata.partNumber, parts.find((k) => k.includes("-part")).match(/-part(\d+)/)[1]);
    // The request after the compaction replays from the summary.
    const after = h.llm.requests[h.llm.requests.indexOf(compactions[0]) + 1];
    assert.match(JSON.stringify(after.body.messages[0]), /Summary of our earlier conversation[^"]*\\nOlga asked about ROMAN-HISTORY/);
    // It names the memory entry that memory_get fetches.
    assert.match(JSON.stringify(after.body.messages[0]), /archive entry 'archive [0-9a-f-]+-part\d+': memory_get fetches it/);
    assert.ok(after.raw.length < WINDOW * 4, "request fits the window again");
    // The compaction reused the system prompt: the provider's cache serves it.
    assert.deepEqual(compactions[0].body.system, after.body.system);
    const date = new Date().toISOString().slice(0, 10);
    const note = await (await (await h.bucket()).get(`agents/main/memory/${date}.md`)).text();
    assert.match(note, /### Extracted from context compaction \(\d\d:\d\d\)\n- Olga studies Roman history/);
  });

  test("the overflow guard cuts an oversize message with a visible note, in exactly one request", async () => {
    const huge = "x".repeat(20_000); // alone larger than the window
    await talk(h, FRIEND, huge);
    await h.settle("agent:main:telegram:dm:777");
    assert.equal(h.llm.requests.length, 1, "exactly one LLM request for the turn: no compaction call, no retry");
    const req = h.llm.requests[0];
    assert.match(req.raw, /characters cut here to fit the model's context window/);
    assert.ok(req.raw.length < WINDOW * 4, `the request fits the window: ${req.raw.length} bytes`);
    const status = await h.sessionStatus("agent:main:telegram:dm:777");
    assert.ok(JSON.stringify(status.messages).includes(huge), "the history keeps the whole message");
  });
});
