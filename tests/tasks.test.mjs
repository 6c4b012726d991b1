// End to end: background sub-agents (`spawn_task`, `/tasks`, issue 33) in
// workerd with real Session and Agent objects on persisted storage. The
// chat's turn ends at once; the sub-agent runs in a Session object of its
// own on SUBAGENT_MODEL, and its result arrives later in the chat, in the
// chat's history and in the notification feed, once, also across a restart.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { GROUP, OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";
import { sseReader } from "./support/sse.mjs";

const ADMIN = "tasks-admin-token";
const MEMORY = "OWNER-MEMORY-SECRET-77a";
const USER = "OWNER-USER-SECRET-12c";
const SUB_MODEL = "claude-cheap-test";

let h;
// Sub-agent answers held until a test lets them go: resolve functions in order.
let held = [];
let holdSubagents = false;
before(async () => {
  h = await startHearth({
    persist: fs.mkdtempSync(path.join(os.tmpdir(), "hearth-tasks-")),
    bindings: { ADMIN_TOKEN: ADMIN, SUBAGENT_MODEL: SUB_MODEL, SUBAGENTS_MAX: "2", STREAM_REPLIES: "off", USAGE_SETTLE_MS: "0" },
  });
  await h.putFile("agents/main/MEMORY.md", MEMORY);
  await h.putFile("agents/main/USER.md", USER);
});
after(() => h.close());
beforeEach(() => {
  h.reset();
  held = [];
  holdSubagents = false;
  h.llm.state.responder = respond;
});

const userText = (body) => JSON.stringify(body.messages.at(-1).content);
const isSubagent = (body) => JSON.stringify(body.messages[0]?.content ?? "").includes("[Background task");
const names = (body) => (body.tools || []).map((t) => t.name);

/** The stand-in model: a chat asked to work in the background spawns; a sub-agent answers its task. */
function respond(body) {
  if (isSubagent(body)) {
    const task = JSON.stringify(body.messages[0].content).match(/JOB-(\d+)/)?.[1] ?? "?";
    const step = { text: `RESULT-OF-JOB-${task}: three findings.` };
    if (holdSubagents) step.gate = new Promise((r) => held.push(r));
    return step;
  }
  const text = userText(body);
  const job = text.match(/in the background: (JOB-\d+)/);
  const last = body.messages.at(-1).content;
  if (job && !(Array.isArray(last) && last.some((b) => b.type === "tool_result"))) {
    return {
      content: [
        { type: "text", text: "On it." },
        { type: "tool_use", id: `toolu_${job[1]}_${Date.now()}`, name: "spawn_task", input: { task: `Research ${job[1]} thoroughly.`, title: job[1] } },
      ],
      stopReason: "tool_use",
    };
  }
  return null; // echo
}

const sentTo = (chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);
const subagentRequests = () => h.llm.requests.filter((r) => isSubagent(r.body));

async function say(text, { chat = OWNER, from = OWNER, replies = 1 } = {}) {
  const before = sentTo(chat).length;
  const res = await h.sendUpdate(tgUpdate({ from, chat, text }));
  assert.equal(res.status, 200);
  await h.until(() => sentTo(chat).length >= before + replies, { what: `${replies} replies to ${text}` });
  return sentTo(chat).slice(before);
}

describe("spawn_task", () => {
  test("the turn ends at once; the result arrives later in the chat, its history and the feed, on SUBAGENT_MODEL", async () => {
    const feed = sseReader(await h.fetch("/api/agents/main/notifications/stream", { headers: { authorization: `Bearer ${ADMIN}` } }));
    holdSubagents = true;
    const [started] = await say("Please do this in the background: JOB-1");
    assert.equal(started, "On it.\n\n⏳ Task t1 runs in the background; its result will be posted here.");
    const ask = h.llm.requests[0];
    assert.ok(names(ask.body).includes("spawn_task"));
    await h.until(() => held.length === 1, { what: "the sub-agent's call" });
    const [sub] = subagentRequests();
    assert.equal(sub.body.model, SUB_MODEL, "the sub-agent runs on SUBAGENT_MODEL");
    assert.equal(ask.body.model, "claude-test", "the chat stays on its own model");
    assert.ok(!names(sub.body).includes("spawn_task") && !names(sub.body).includes("tasks"), "it never spawns again");
    assert.equal(sub.body.messages.length, 1, "its history is the handoff alone");
    assert.match(JSON.stringify(sub.body.messages[0]), /Research JOB-1 thoroughly\./);
    assert.ok(!JSON.stringify(sub.body.messages).includes("Please do this"), "only the handoff crosses");
    assert.ok(systemText(sub).includes(MEMORY), "a task of the owner's main chat has the main scope");
    // While it works, /tasks answers with no model call.
    const calls = h.llm.requests.length;
    const [list] = await say("/tasks");
    assert.match(list, /t1 JOB-1 \(running/);
    assert.equal(h.llm.requests.length, calls);
    held.shift()();
    await h.until(() => sentTo(OWNER).length === 3, { what: "the result in the chat" });
    const result = sentTo(OWNER)[2];
    assert.match(result, /^✅ Task t1 done \(JOB-1\):/);
    assert.match(result, /RESULT-OF-JOB-1: three findings\./);
    const note = await feed.until((e) => e.event === "notification" && /RESULT-OF-JOB-1/.test(e.json.text));
    assert.equal(note.json.source, "agent:main:main");
    feed.cancel();
    // The next turn knows it.
    await say("what did the task find?");
    const next = h.llm.requests.at(-1);
    assert.ok(!isSubagent(next.body));
    assert.match(JSON.stringify(next.body.messages), /RESULT-OF-JOB-1: three findings\./);
    const [after] = await say("/tasks");
    assert.match(after, /t1 JOB-1 \(done/);
  });

  test("a task spawned in a group has the group's scope", async () => {
    const text = "@hearth_bot in the background: JOB-2";
    await h.sendUpdate(tgUpdate({ from: OWNER, chat: GROUP, text, entities: [{ type: "mention", offset: 0, length: 11 }] }));
    await h.until(() => sentTo(GROUP).length === 2, { what: "the group's start line and result" });
    const [sub] = subagentRequests();
    const system = systemText(sub);
    assert.ok(!system.includes(MEMORY) && !system.includes(USER), "no private files in a group's task");
    assert.match(sentTo(GROUP)[1], /Task t\d+ done \(JOB-2\)/);
  });

  test("at most SUBAGENTS_MAX run at once; the rest wait, and a waiting one can be cancelled", async () => {
    holdSubagents = true;
    for (const n of [3, 4, 5, 6]) await say(`in the background: JOB-${n}`);
    await h.until(() => held.length === 2, { what: "two sub-agents running" });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(subagentRequests().length, 2, "SUBAGENTS_MAX=2: the others wait");
    const [list] = await say("/tasks");
    assert.match(list, /JOB-5 \(waiting/);
    assert.match(list, /JOB-6 \(waiting/);
    const id = list.match(/• (t\d+) JOB-6/)[1];
    const [cancel] = await say(`/tasks cancel ${id}`);
    assert.match(cancel, new RegExp(`Task ${id} cancelled \\(JOB-6\\)`));
    held.shift()();
    await h.until(() => held.length === 2, { what: "the next waiting task started" });
    assert.match(JSON.stringify(subagentRequests().at(-1).body.messages[0]), /JOB-5/);
    for (const release of held.splice(0)) release();
    await h.until(() => sentTo(OWNER).filter((t) => /Task t\d+ done/.test(t)).length === 3, { what: "three results" });
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!sentTo(OWNER).some((t) => /^✅ Task t\d+ done \(JOB-6\)/.test(t)), "the cancelled one never ran");
    assert.ok(!subagentRequests().some((r) => /JOB-6/.test(JSON.stringify(r.body.messages[0]))));
  });

  test("a sub-agent survives a restart mid-task and delivers once", async () => {
    holdSubagents = true;
    await say("in the background: JOB-7");
    await h.until(() => held.length === 1, { what: "the sub-agent's call" });
    // workerd goes down while the sub-agent's model call is open.
    await h.restart();
    holdSubagents = false;
    await h.until(() => sentTo(OWNER).some((t) => /RESULT-OF-JOB-7/.test(t)), { what: "the result after the restart", timeoutMs: 20000 });
    assert.ok(subagentRequests().length >= 2, "the call was made again after the restart");
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(sentTo(OWNER).filter((t) => /RESULT-OF-JOB-7/.test(t)).length, 1, "delivered once");
    held.splice(0).forEach((r) => r());
  });
});
