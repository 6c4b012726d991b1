// End to end: an agent hands a task to a peer agent of the same Worker
// (`delegate`, issue 33), in workerd with real Session and Agent objects.
// The peer answers in a Session object of its own (shared scope: its own
// persona, none of anyone's private files); the asking turn waits for its
// answer. The LLM stand-in answers each agent by the persona in its system
// prompt, as a model following its instructions would.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, systemText, telegramTurn, tgUpdate, toolResults } from "./support/hearth.mjs";
import { sseReader } from "./support/sse.mjs";

const ADMIN = "delegation-admin-token";
const MAIN_SOUL = "SOUL-OF-MAIN-7f3e";
const RESEARCH_SOUL = "SOUL-OF-RESEARCH-2c1a";
const PRIVATE = {
  "agents/main/MEMORY.md": "MAIN-MEMORY-SECRET-9a1",
  "agents/main/USER.md": "MAIN-USER-SECRET-4b2",
  "agents/research/MEMORY.md": "RESEARCH-MEMORY-SECRET-1d3",
  "agents/research/USER.md": "RESEARCH-USER-SECRET-8e4",
};
const TASK = "Find the boiling point of water at sea level, in Celsius.";
const today = new Date().toISOString().slice(0, 10);

let h;
// How the stand-in model behaves in the test running now.
let mode = "answer";
before(async () => {
  h = await startHearth({
    bindings: {
      AGENTS: "main,research,work,slow",
      ADMIN_TOKEN: ADMIN,
      USAGE_SETTLE_MS: "0",
      ALLOWED_DELEGATES__MAIN: "research,ghost",
      ALLOWED_DELEGATES__RESEARCH: "main",
      ALLOWED_DELEGATES__SLOW: "research",
      DELEGATE_TIMEOUT_SECONDS__SLOW: "1",
      STREAM_REPLIES: "off",
    },
  });
  await h.putFile("agents/main/SOUL.md", `# Soul\n${MAIN_SOUL}`);
  await h.putFile("agents/slow/SOUL.md", `# Soul\n${MAIN_SOUL}`);
  await h.putFile("agents/research/SOUL.md", `# Soul\n${RESEARCH_SOUL}`);
  for (const [key, text] of Object.entries(PRIVATE)) await h.putFile(key, text);
  await h.putFile(`agents/main/memory/${today}.md`, "MAIN-DAILY-NOTE-5f6");
});
after(() => h.close());
beforeEach(() => {
  h.reset();
  h.llm.state.responder = respond;
});

const names = (body) => (body.tools || []).map((t) => t.name);
const isResearch = (body) => systemText({ body }).includes(RESEARCH_SOUL);
/** The tool results of the turn under way (after the person's last message). */
function resultsOf(body) {
  const since = [];
  for (const m of [...body.messages].reverse()) {
    const blocks = Array.isArray(m.content) ? m.content : [{ type: "text" }];
    if (m.role === "user" && blocks.some((b) => b.type === "text")) break;
    since.unshift(m);
  }
  return toolResults({ body: { messages: since } });
}
/** A Telegram reply's text, its HTML read back. */
const plain = (html) => html.replace(/<[^>]+>/g, "").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
const lastUserText = (body) => JSON.stringify(body.messages.at(-1).content);

/** The stand-in model: each agent as its instructions would have it. */
function respond(body) {
  const results = resultsOf(body);
  const fresh = body.messages.at(-1).content.some?.((b) => b.type === "tool_result");
  if (mode === "script") return null;
  if (isResearch(body)) {
    if (mode === "loop" && names(body).includes("delegate")) {
      return { toolCall: { name: "delegate", input: { agent: "main", task: "pass it back" } } };
    }
    if (mode === "slow") return { text: "too late", delayMs: 3000 };
    return { text: "research says: 100 degrees Celsius." };
  }
  // The asking agent.
  if (mode === "refuse") {
    if (!fresh) return { content: [
      { type: "tool_use", id: "toolu_a", name: "delegate", input: { agent: "work", task: TASK } },
      { type: "tool_use", id: "toolu_b", name: "delegate", input: { agent: "ghost", task: TASK } },
    ], stopReason: "tool_use" };
    return { text: `main: ${results.map((r) => r.text).join(" | ")}` };
  }
  if (mode === "loop") {
    // Told to keep passing the task: it does, until told to answer.
    if (fresh && results.at(-1).isError) return { text: `main gives up passing: ${results.length} calls` };
    return { toolCall: { name: "delegate", input: { agent: "research", task: "keep passing this between you" } } };
  }
  if (!fresh) return { toolCall: { name: "delegate", input: { agent: "research", task: TASK } } };
  return { text: `main: ${results.at(-1).text}` };
}

const researchRequests = () => h.llm.requests.filter((r) => isResearch(r.body));
const mainRequests = () => h.llm.requests.filter((r) => !isResearch(r.body));

describe("delegate", () => {
  test("a Telegram DM's task goes to the peer, which answers with its own workspace and no one's private files", async () => {
    // The owner's conversation memory holds an exchange about the very words of the task.
    mode = "script";
    h.llm.push({ text: "Noted." });
    await telegramTurn(h, tgUpdate({ text: "The boiling point of water at sea level is my kettle password: ZEBRA-4411." }), OWNER);
    h.llm.push({ text: "NONE" });
    await telegramTurn(h, tgUpdate({ text: "/reset" }), OWNER);
    mode = "answer";
    const requests = await telegramTurn(h, tgUpdate({ text: "Please ask research: what is the boiling point of water at sea level?" }), OWNER);
    const reply = plain(h.telegram.sent().at(-1).body.text);
    assert.match(reply, /^main: research answered:\n\nresearch says: 100 degrees Celsius\./, reply);
    const [ask] = requests.filter((r) => !isResearch(r.body));
    assert.ok(names(ask.body).includes("delegate"));
    const tool = ask.body.tools.find((t) => t.name === "delegate");
    assert.deepEqual(tool.input_schema.properties.agent.enum, ["research", "ghost"]);
    const peer = researchRequests();
    assert.equal(peer.length, 1, "the peer answered in one call");
    const system = systemText(peer[0]);
    assert.ok(system.includes(RESEARCH_SOUL), "the peer's own persona");
    for (const secret of [...Object.values(PRIVATE), "MAIN-DAILY-NOTE-5f6", MAIN_SOUL, "ZEBRA-4411"]) {
      assert.ok(!JSON.stringify(peer[0].body).includes(secret), `the peer's request holds ${secret}`);
    }
    assert.ok(lastUserText(peer[0].body).includes(TASK), "the task crossed");
    assert.ok(!JSON.stringify(peer[0].body.messages).includes("Please ask research"), "the owner's message did not");
    assert.ok(!names(peer[0].body).includes("delegate"), "a delegated session does not pass it on (DELEGATE_DEPTH 1)");
    // The owner's own turn still had the owner's private files, and recalled the exchange.
    assert.ok(systemText(ask).includes(PRIVATE["agents/main/MEMORY.md"]));
    assert.ok(JSON.stringify(ask.body.messages).includes("ZEBRA-4411"), "the owner's turn recalls it: the peer's would have, from the owner's store");
    // The peer's calls are in its own ledger, as delegated work.
    const u = await (await h.fetch("/api/agents/research/usage", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    assert.equal(u.byKind.delegated.calls, 1, JSON.stringify(u.byKind));
    const peerKey = `agent:research:from:main:1:${createHash("sha256").update("agent:main:main").digest("hex").slice(0, 16)}`;
    const status = await h.sessionStatus(peerKey);
    assert.equal(status.open, 0);
    assert.ok(status.messages.some((m) => m.role === "user" && JSON.stringify(m).includes(TASK)), "the peer's session kept the task");
  });

  test("the HTTP stream shows the delegate call as tool events", async () => {
    mode = "answer";
    const body = JSON.stringify({ messages: [{ role: "user", content: "ask research" }], threadId: "asks" });
    const res = await h.fetch("/api/agents/main/stream", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body,
    });
    const sse = sseReader(res);
    const done = await sse.until((e) => e.event === "done");
    assert.ok(done, JSON.stringify(sse.events));
    const tools = sse.events.filter((e) => e.event === "tool").map((e) => `${e.json.name}:${e.json.status}`);
    assert.deepEqual(tools, ["delegate:running", "delegate:done"]);
    assert.match(done.json.text, /research says: 100 degrees/);
  });

  test("a peer not allowed, or not an agent of the Worker, is refused with no call made", async () => {
    mode = "refuse";
    await telegramTurn(h, tgUpdate({ text: "ask work and ghost" }), OWNER);
    assert.equal(researchRequests().length, 0);
    assert.equal(h.llm.requests.length, 2, "only the asking agent's two calls");
    const reply = plain(h.telegram.sent().at(-1).body.text);
    assert.match(reply, /"work" is not one you may delegate to \(ALLOWED_DELEGATES: research, ghost\); no call was made/);
    assert.match(reply, /"ghost" is not an agent of this Worker/);
  });

  test("two agents told to keep passing a task end in a few calls, with an answer", async () => {
    mode = "loop";
    await telegramTurn(h, tgUpdate({ text: "Keep passing this task between you and research, forever." }), OWNER);
    const reply = plain(h.telegram.sent().at(-1).body.text);
    assert.match(reply, /^main gives up passing: 4 calls/, reply);
    assert.equal(researchRequests().length, 3, "DELEGATE_CALLS_PER_TURN (3) askings");
    assert.equal(mainRequests().length, 5);
    for (const r of researchRequests()) assert.ok(!names(r.body).includes("delegate"), "research may not pass it back");
    const last = resultsOf(mainRequests().at(-1).body).at(-1);
    assert.ok(last.isError && /already asked peers 3 times/.test(last.text), last.text);
  });

  test("a peer that does not answer in time is a tool error that says so, and its answer is stopped", async () => {
    mode = "slow";
    const r = await h.fetch("/api/agents/slow/generate", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ messages: [{ role: "user", content: "ask research, it is slow" }], threadId: "waits" }),
    });
    const answer = await r.json();
    assert.equal(r.status, 200, JSON.stringify(answer));
    assert.match(answer.text, /research did not answer within 1 s \(DELEGATE_TIMEOUT_SECONDS\), so it was stopped/);
    const peerKey = `agent:research:from:slow:1:${createHash("sha256").update("agent:slow:api:waits").digest("hex").slice(0, 16)}`;
    await h.until(async () => (await h.sessionStatus(peerKey)).open === 0, { what: "the peer's stopped turn", timeoutMs: 8000 });
    const status = await h.sessionStatus(peerKey);
    assert.ok(!JSON.stringify(status.messages).includes("too late"), "the late answer was not kept");
    assert.match(JSON.stringify(status.notes), /Stopped before anything was written/);
  });
});
