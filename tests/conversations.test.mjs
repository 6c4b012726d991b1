// End to end: what was said in a conversation is found again, weeks later, in workerd.
// A reset (Telegram /reset, or over the HTTP API) adds the conversation's exchanges to
// the conversation memory of its scope in the Agent object; `memory_search` (the agent's
// tool), MCP `search_memory`, per-turn recall and `session_logs` find them with when,
// who and the exchanges around them; archives already in R2 are indexed in the
// background by the Agent object's alarm; a group, a friend's DM, an API key without
// `owner` (over the HTTP API and over MCP) never finds the owner's words.
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { FRIEND, GROUP, OWNER, startHearth, telegramTurn, tgUpdate, toolResults } from "./support/hearth.mjs";

const ADMIN = "conversations-admin-token";
const SITE = "site-key-token-conversations-0123";
const DAY = 86_400_000;
let h;
before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, API_TOKENS: `site:${SITE}:main` } });
});
after(() => h.close());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);


const turn = (update, chat) => telegramTurn(h, update, chat);

const auth = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
async function generate(text, extra = {}) {
  const r = await h.fetch("/api/agents/main/generate", { method: "POST", headers: auth, body: JSON.stringify({ messages: [{ role: "user", content: text }], ...extra }) });
  return { status: r.status, body: await r.json() };
}

/** The admin API's conversation search of a store. */
async function adminSearch(store, query) {
  const r = await h.fetch("/api/agents/main/memory/call", { method: "POST", headers: auth, body: JSON.stringify({ call: "search_conversations", store, query, k: 5 }) });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).hits;
}

/** An MCP client (the official SDK over Streamable HTTP) with `token`'s credentials. */
async function mcpClient(token) {
  const client = new Client({ name: "conversations-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("http://hearth.test/mcp/main"), {
    fetch: (url, init = {}) =>
      h.mf.dispatchFetch(String(url), { method: init.method, headers: Object.fromEntries(new Headers(init.headers).entries()), body: init.body }).then(
        async (res) => new Response(res.status === 202 || res.status === 204 ? null : await res.arrayBuffer(), { status: res.status, headers: Object.fromEntries(res.headers.entries()) }),
      ),
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** MCP `search_memory` with `token`'s credentials: the tool's JSON answer. */
async function mcpSearch(token, args) {
  const client = await mcpClient(token);
  try {
    const res = await client.callTool({ name: "search_memory", arguments: args });
    return JSON.parse(res.content.map((c) => c.text).join(""));
  } finally {
    await client.close();
  }
}

/** How many of `hits` are an exchange whose words include `words`. */
const saying = (hits, words) => hits.filter((x) => x.exchange.text.includes(words)).length;

const today = () => new Date().toISOString().slice(0, 10);
const mention = (text) => tgUpdate({ from: FRIEND, chat: GROUP, text: `@hearth_bot ${text}`, entities: [{ type: "mention", offset: 0, length: 11 }] });

describe("conversation memory", () => {
  test("after a Telegram /reset, memory_search finds what the owner said, with when, who and the next exchange", async () => {
    h.llm.push({ text: "Noted: locker 3301." });
    await turn(tgUpdate({ text: "my gym locker code is 3301, the one by the sauna" }), OWNER);
    h.llm.push({ text: "Good luck with the squats!" });
    await turn(tgUpdate({ text: "leg day tomorrow, wish me luck" }), OWNER);
    h.llm.push({ text: "NONE" }); // the pre-reset extraction finds nothing worth a note
    await turn(tgUpdate({ text: "/reset" }), OWNER);
    assert.match(sentTo(OWNER).at(-1).body.text, /archived|fresh|new/i);

    // Later: "what did I tell you about my locker?" The model searches today's conversations.
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "gym locker", since: "today" } } }, { text: "3301" });
    const reqs = await turn(tgUpdate({ text: "what did I tell you about my gym locker?" }), OWNER);
    const result = toolResults(reqs.at(-1)).at(-1);
    assert.equal(result.isError, false, result.text);
    const hit = JSON.parse(result.text).conversations[0];
    assert.equal(hit.said, "my gym locker code is 3301, the one by the sauna");
    assert.equal(hit.reply, "Noted: locker 3301.");
    assert.equal(hit.speaker, "Olga (@olga)", "the Telegram sender, as Hearth names people");
    assert.equal(hit.channel, "telegram");
    assert.ok(hit.when.startsWith(today()), hit.when);
    assert.equal(hit.after[0].said, "leg day tomorrow, wish me luck", "the exchange after it, as context");
    assert.ok(!result.text.includes("system-reminder"), "the runtime's reminders are not what was said");

    // The same question next turn is recalled without a tool call: the exchange is in the reminder.
    h.llm.push({ text: "3301 again" });
    const next = await turn(tgUpdate({ text: "remind me, which gym locker code did I pick?" }), OWNER);
    const user = next[0].body.messages.at(-1).content.map((b) => b.text || "").join("\n");
    assert.match(user, /<system-reminder>Possibly relevant, from your memory[^]*\[said \d{4}-\d\d-\d\d \d\d:\d\d [^\]]* by Olga \(@olga\)\] my gym locker code is 3301/);
  });

  test("a group and a friend's DM never find the owner's conversation", async () => {
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "gym locker code 3301" } } }, { text: "no idea" });
    const g = await turn(mention("what is Olga's gym locker code?"), GROUP);
    assert.deepEqual(JSON.parse(toolResults(g.at(-1)).at(-1).text).conversations, []);
    for (const r of g) assert.ok(!r.raw.includes("3301, the one by the sauna"), "the owner's words reached a group request");

    h.llm.push({ toolCall: { name: "memory_search", input: { query: "gym locker code" } } }, { text: "no idea" });
    const d = await turn(tgUpdate({ from: FRIEND, text: "what is Olga's gym locker code?" }), FRIEND);
    assert.deepEqual(JSON.parse(toolResults(d.at(-1)).at(-1).text).conversations, []);
    for (const r of d) assert.ok(!r.raw.includes("3301, the one by the sauna"));

    // The group's own conversation is its own: found in the group's store only.
    h.llm.push({ text: "See you there" }, { text: "NONE" });
    await turn(mention("the climbing trip meets at the north car park"), GROUP);
    await turn(tgUpdate({ from: FRIEND, chat: GROUP, text: "/reset@hearth_bot", entities: [{ type: "bot_command", offset: 0, length: 17 }] }), GROUP);
    assert.equal(saying(await adminSearch(`group:telegram:${GROUP}`, "climbing car park"), "climbing trip meets"), 1);
    assert.equal((await adminSearch("main", "climbing car park")).length, 0);
  });

  test("an API key without owner never finds the owner's conversations: not over the HTTP API, not over MCP", async () => {
    const asKey = async (text, threadId) => {
      const r = await h.fetch("/api/agents/main/generate", { method: "POST", headers: { authorization: `Bearer ${SITE}`, "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: text }], threadId }) });
      return { status: r.status, body: await r.json() };
    };
    // The key's thread: the model searches for the owner's words; a question recalls nothing of them.
    const first = h.llm.requests.length;
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "gym locker code 3301 sauna" } } }, { text: "no idea" });
    const r = await asKey("which gym locker code did Olga pick, the one by the sauna?", "t1");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const reqs = h.llm.requests.slice(first);
    assert.deepEqual(JSON.parse(toolResults(reqs.at(-1)).at(-1).text).conversations, []);
    for (const req of reqs) assert.ok(!req.raw.includes("3301, the one by the sauna"), "the owner's words reached a key's request");
    // Over MCP with the key: its own thread's memory only.
    assert.deepEqual((await mcpSearch(SITE, { query: "gym locker code 3301" })).conversations, []);
    // The same search with the owner's credentials finds it (the words are there).
    assert.equal((await mcpSearch(ADMIN, { query: "gym locker code 3301" })).conversations[0]?.said, "my gym locker code is 3301, the one by the sauna");

    // The key's own conversation is its own: after its reset, the key finds it, the owner's main store does not.
    h.llm.push({ text: "Shipped!" }, { text: "NONE" });
    assert.equal((await asKey("the order 5521 ships with the blue courier", "t1")).status, 200);
    assert.equal((await asKey("/reset", "t1")).status, 200);
    const own = await mcpSearch(SITE, { query: "order 5521 courier", since: "today" });
    // MCP's default thread for a key is its `mcp` thread, a store of its own: the key's
    // t1 thread is another store, so MCP finds nothing there either; the admin API
    // sees the thread's store by name.
    assert.deepEqual(own.conversations, []);
    assert.equal(saying(await adminSearch("api:key-site-t1", "order 5521 courier"), "order 5521 ships"), 1);
    assert.equal((await adminSearch("main", "order 5521 courier")).length, 0);
  });

  test("over the HTTP API: a thread's conversation is found by MCP search_memory after its /reset", async () => {
    let r = await generate("the plumber said the boiler needs a new valve by Friday", { threadId: "main", resourceId: "Olga" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    h.llm.push({ text: "NONE" });
    r = await generate("/reset", { threadId: "main" });
    assert.equal(r.status, 200, JSON.stringify(r.body));

    const client = await mcpClient(ADMIN);
    try {
      const res = await client.callTool({ name: "search_memory", arguments: { query: "boiler valve", since: "today" } });
      const v = JSON.parse(res.content.map((c) => c.text).join(""));
      const hit = v.conversations[0];
      assert.equal(hit.said, "the plumber said the boiler needs a new valve by Friday", JSON.stringify(v));
      assert.equal(hit.speaker, "Olga", "the resourceId is who spoke");
      assert.equal(hit.channel, "api");
      assert.ok(hit.reply.startsWith("echo:"), "the agent's answer comes with it");
    } finally {
      await client.close();
    }
  });

  test("memory_search with several phrasings finds a fact for each, in one call", async () => {
    // Two facts from two conversations; one query per fact, fused by rank.
    h.llm.push(
      { toolCall: { name: "memory_search", input: { query: "gym locker code sauna", k: 3 } } },
      { toolCall: { name: "memory_search", input: { query: "gym locker code sauna", queries: ["boiler valve plumber"], k: 3 } } },
      { text: "both" },
    );
    const reqs = await turn(tgUpdate({ text: "what were my locker code and the boiler thing?" }), OWNER);
    const [one, both] = toolResults(reqs.at(-1)).slice(-2).map((x) => JSON.parse(x.text));
    const boiler = "the plumber said the boiler needs a new valve by Friday";
    assert.ok(!one.conversations.some((x) => x.said === boiler), "one phrasing finds one fact");
    const v = both;
    const said = v.conversations.map((x) => x.said);
    assert.ok(said.includes("my gym locker code is 3301, the one by the sauna"), JSON.stringify(v));
    assert.ok(said.includes("the plumber said the boiler needs a new valve by Friday"), JSON.stringify(v));
  });

  test("session_logs search is ranked over every archived conversation", async () => {
    h.llm.push({ toolCall: { name: "session_logs", input: { action: "search", query: "plumber sauna" } } }, { text: "found" });
    const reqs = await turn(tgUpdate({ text: "search my transcripts for the boiler" }), OWNER);
    const v = JSON.parse(toolResults(reqs.at(-1)).at(-1).text);
    const said = v.hits.map((x) => x.said);
    assert.ok(said.includes("the plumber said the boiler needs a new valve by Friday"), JSON.stringify(v));
    assert.ok(said.includes("my gym locker code is 3301, the one by the sauna"), "both archives, ranked together");
  });

  test("an archive already in R2 is indexed in the background, once, and found by its date", async () => {
    // A conversation from 40 days ago, archived before conversation memory existed.
    const at = Date.now() - 40 * DAY;
    const lines = [
      { role: "user", content: [{ type: "text", text: "<system-reminder>Current time: then</system-reminder>" }, { type: "text", text: "we booked the cabin at Lake Bled for the anniversary" }], timestamp: at },
      { role: "assistant", content: [{ type: "text", text: "How romantic! Which dates?" }], timestamp: at + 1000 },
      { role: "user", content: "the 12th to the 15th", timestamp: at + 2000 },
    ];
    const gz = gzipSync(lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const body = gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength);
    const bucket = await h.bucket();
    const meta = { sessionKey: "agent:main:main", sessionId: "old-cabin", agentId: "main", messageCount: "3", archivedAt: String(at) };
    await bucket.put("agents/main/sessions/old-cabin.jsonl.gz", body, { customMetadata: meta });
    assert.equal((await adminSearch("main", "cabin lake bled")).length, 0, "not indexed before the alarm");

    const worker = await h.mf.getWorker();
    await worker.scheduled({ scheduledTime: Date.now(), cron: "*/5 * * * *" });
    const hits = await h.until(async () => {
      const found = await adminSearch("main", "cabin lake bled");
      return found.length ? found : null;
    }, { what: "the backfill" });
    assert.equal(hits[0].exchange.text, "we booked the cabin at Lake Bled for the anniversary");
    assert.equal(hits[0].exchange.reply, "How romantic! Which dates?");

    // Found by its day, not by "today".
    const day = new Date(at).toISOString().slice(0, 10);
    h.llm.push(
      { toolCall: { name: "memory_search", input: { query: "cabin anniversary", since: day, until: day } } },
      { toolCall: { name: "memory_search", input: { query: "cabin anniversary", since: "today" } } },
      { text: "the 12th" },
    );
    const reqs = await turn(tgUpdate({ text: "what did I tell you about the anniversary cabin back then?" }), OWNER);
    const [thatDay, sinceToday] = toolResults(reqs.at(-1)).slice(-2).map((x) => JSON.parse(x.text));
    assert.equal(thatDay.conversations[0].said, "we booked the cabin at Lake Bled for the anniversary");
    assert.ok(thatDay.conversations[0].when.startsWith(day));
    assert.deepEqual(sinceToday.conversations, []);

    // Another tick adds nothing twice.
    await worker.scheduled({ scheduledTime: Date.now() + 300_000, cron: "*/5 * * * *" });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(saying(await adminSearch("main", "cabin lake bled"), "we booked the cabin"), 1, "indexed once");
  });
});
