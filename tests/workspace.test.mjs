// The workspace and the prompt end to end: section order per scope and mode,
// privacy, skills, workspace tools, byte-stable prefixes, few R2 operations.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "admin-secret";
let h;
const today = () => new Date().toISOString().slice(0, 10);
const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

async function talk(from, text, chat) {
  const target = chat ?? from;
  const before = h.telegram.sent().filter((r) => Number(r.body.chat_id) === target).length;
  const entities = chat && chat < 0 ? [{ type: "mention", offset: 0, length: 11 }] : undefined;
  const body = chat && chat < 0 ? `@hearth_bot ${text}` : text;
  assert.equal((await h.sendUpdate(tgUpdate({ from, chat, text: body, entities }))).status, 200);
  await h.until(() => h.telegram.sent().filter((r) => Number(r.body.chat_id) === target).length > before, { what: `reply to ${text}` });
  return h.llm.requests.at(-1);
}

const sectionTitles = (system) => [...system.matchAll(/^## (.+)$/gm)].map((m) => m[1]);

before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN } });
  const files = {
    "agents/main/SOUL.md": "Calm and kind.",
    "agents/main/IDENTITY.md": "- **Name:** Ember\n- **Creature:** fox\n- **Emoji:** 🔥\n- **Avatar:** _(pick one)_",
    "agents/main/USER.md": "PRIVATE-USER",
    "agents/main/AGENTS.md": "Be brief.",
    "agents/main/MEMORY.md": "PRIVATE-MEMORY",
    "agents/main/TOOLS.md": "Tool notes here.",
    "agents/main/HEARTBEAT.md": "# Heartbeat\n<!-- nothing yet -->\n---\n",
    "agents/main/GUARDRAILS.md": "Never send money.",
    [`agents/main/memory/${yesterday()}.md`]: "PRIVATE-YESTERDAY",
    [`agents/main/memory/${today()}.md`]: "PRIVATE-TODAY",
    "skills/zeta-tool/SKILL.md": "---\nname: zeta-tool\ndescription: The last skill.\n---\nZETA BODY",
    "skills/alpha/SKILL.md": "---\nname: alpha\ndescription: The global alpha.\n---\nGLOBAL ALPHA",
    "agents/main/skills/alpha/SKILL.md": "---\nname: alpha\ndescription: The agent's own alpha.\n---\nLOCAL ALPHA BODY",
    "skills/broken/SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\n",
    "skills/webby/SKILL.md": "---\nname: webby\ndescription: Names web tools.\nallowed-tools: WebSearch\n---\n",
    "skills/crawler/SKILL.md": "---\nname: crawler\ndescription: Needs a browser.\ncompatibility: Requires a headless browser\n---\n",
  };
  for (const [k, v] of Object.entries(files)) await h.putFile(k, v);
});
after(() => h.close());
beforeEach(() => h.reset());

describe("prompt assembly", () => {
  test("a main session gets every section in the documented order", async () => {
    const req = await talk(OWNER, "order please");
    const system = systemText(req);
    assert.deepEqual(sectionTitles(system), [
      "Core", "Guardrails", "Your Soul", "Your Identity", "About Your Human", "Operating Instructions",
      "Long-Term Memory", "Recent Context > Yesterday", "Recent Context > Today", "Tool Notes",
      "Skills (Mandatory Scan)", "Runtime",
    ]);
    assert.match(system, /## Your Identity\n\nname=Ember, creature=fox, emoji=🔥\n/);
    assert.ok(!system.includes("pick one"));
    assert.ok(!system.includes("## Heartbeats"), "an empty HEARTBEAT.md is left out");
    for (const p of ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-YESTERDAY", "PRIVATE-TODAY"]) assert.ok(system.includes(p));
    // Skills: alphabetical, local shadows global, broken and incompatible ones left out;
    // allowed-tools naming a tool Hearth lacks (WebSearch) is a hint: listed.
    const names = [...system.matchAll(/<name>([^<]+)<\/name>/g)].map((m) => m[1]);
    assert.deepEqual(names, ["alpha", "webby", "zeta-tool"]);
    assert.match(system, /The agent's own alpha/);
    assert.ok(!system.includes("The global alpha"));
    // The time is in the user message, not the system prompt.
    assert.ok(!/\d\d:\d\d \(/.test(system));
    assert.match(JSON.stringify(req.body.messages.at(-1)), /system-reminder>Current time: /);
  });

  test("group and stranger-facing sessions never see private files", async () => {
    const req = await talk(FRIEND, "group order", GROUP);
    const system = systemText(req);
    assert.deepEqual(sectionTitles(system), [
      "Core", "Guardrails", "Your Soul", "Your Identity", "Operating Instructions", "Tool Notes", "Skills (Mandatory Scan)", "Runtime",
    ]);
    const dm = await talk(FRIEND, "dm order");
    for (const r of [req, dm]) {
      for (const p of ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-YESTERDAY", "PRIVATE-TODAY"]) assert.ok(!r.raw.includes(p), `${p} leaked`);
      const tools = r.body.tools.map((t) => t.name);
      assert.ok(!tools.includes("write_file"), "shared sessions cannot write the workspace");
    }
  });

  test("two consecutive turns send byte-identical prefixes", async () => {
    const a = await talk(OWNER, "first of two");
    const b = await talk(OWNER, "second of two");
    assert.equal(JSON.stringify(b.body.system), JSON.stringify(a.body.system));
    assert.equal(JSON.stringify(b.body.tools), JSON.stringify(a.body.tools));
    const names = a.body.tools.map((t) => t.name);
    assert.deepEqual(names, [...names].sort());
    // The conversation's cache breakpoint moves to the newest block each turn
    // (cache_control is not part of Anthropic's prefix match); apart from it
    // the earlier request is replayed byte for byte.
    const withoutBreakpoint = (m) => JSON.stringify(m, (k, v) => (k === "cache_control" ? undefined : v));
    const prefix = a.body.messages.map(withoutBreakpoint).join("\n");
    const later = b.body.messages.slice(0, a.body.messages.length).map(withoutBreakpoint).join("\n");
    assert.equal(later, prefix, "history replayed byte for byte");
    const marked = (body) => body.messages.flatMap((m) => m.content).filter((blk) => blk.cache_control);
    assert.equal(marked(b.body).length, 1, "one conversation breakpoint");
    assert.equal(marked(b.body)[0], b.body.messages.at(-1).content.at(-1), "on the newest block");
    assert.match(JSON.stringify(marked(b.body)[0]), /second of two/);
  });

  test("an edit made in R2 from outside is seen on the next turn, with one R2 operation in steady state", async () => {
    await talk(OWNER, "warm up");
    await talk(OWNER, "steady");
    const status = await (await h.fetch("/api/agents/main/sessions/agent:main:main", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    assert.equal(status.workspaceR2Ops, 1, "one listing, nothing re-downloaded");
    await h.putFile("agents/main/SOUL.md", "Now I speak like a pirate.");
    const req = await talk(OWNER, "who are you now?");
    assert.match(systemText(req), /speak like a pirate/);
  });

  test("a new conversation's first turn starts from the workspace its agent composed: R2 reads only what changed, the same prompt, outside edits seen", async () => {
    await talk(OWNER, "the agent is warm");
    // An edit from outside, just before a new conversation starts.
    await h.putFile("agents/main/SOUL.md", "Calm and kind. EDITED-JUST-BEFORE.");
    const ask = (text, threadId) =>
      h.fetch("/api/agents/main/generate", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify({ messages: [{ role: "user", content: text }], ...(threadId ? { threadId } : {}) }),
      });
    const first = await (await ask("a new thread")).json();
    const key = `agent:main:api:${first.threadId}`;
    const firstReq = h.llm.requests.at(-1);
    assert.match(systemText(firstReq), /EDITED-JUST-BEFORE/, "the edit is seen on the next turn");
    assert.equal((await h.sessionStatus(key)).workspaceR2Ops, 2, "the agent's root listed, the edited file read, nothing else");
    for (const p of ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-YESTERDAY", "PRIVATE-TODAY"]) assert.ok(!firstReq.raw.includes(p), `${p} left the Agent object`);
    // The thread's next turn loads on its own: the same system prompt and tools, byte for byte.
    await ask("and again", first.threadId);
    const secondReq = h.llm.requests.at(-1);
    assert.equal(JSON.stringify(secondReq.body.system), JSON.stringify(firstReq.body.system));
    assert.equal(JSON.stringify(secondReq.body.tools), JSON.stringify(firstReq.body.tools));
    assert.equal((await h.sessionStatus(key)).workspaceR2Ops, 1);
    // Another new conversation, nothing changed meanwhile: one listing in all.
    const other = await (await ask("one more thread")).json();
    assert.equal((await h.sessionStatus(`agent:main:api:${other.threadId}`)).workspaceR2Ops, 1);
    const unkeyed = (r) => JSON.stringify(r.body.system).replace(/session=agent:main:api:t-[0-9a-f]+/, "session=…");
    assert.equal(unkeyed(h.llm.requests.at(-1)), unkeyed(firstReq), "the same prompt but for the session's key");
    await h.putFile("agents/main/SOUL.md", "Calm and kind.");
  });

  test("a bootstrap session gets the commissioning order", async () => {
    await h.putFile("agents/main/BOOTSTRAP.md", "Ask your human for a name, then delete this file.");
    try {
      const req = await talk(OWNER, "hello new agent");
      assert.deepEqual(sectionTitles(systemText(req)), [
        "Core", "Guardrails", "Commissioning (BOOTSTRAP.md)", "Your Soul", "Your Identity", "About Your Human", "Runtime",
      ]);
    } finally {
      await (await h.bucket()).delete("agents/main/BOOTSTRAP.md");
    }
  });
});

describe("workspace tools", () => {
  const toolResult = (req) => {
    const last = req.body.messages.at(-1);
    return last.content.find((b) => b.type === "tool_result");
  };

  test("load_skill returns the whole local skill file", async () => {
    h.llm.push({ toolCall: { name: "load_skill", input: { name: "alpha" } } }, { text: "loaded" });
    await talk(OWNER, "use alpha");
    assert.match(toolResult(h.llm.requests.at(-1)).content, /LOCAL ALPHA BODY/);
  });

  test("a group cannot read a note the owner had the agent write", async () => {
    h.llm.push({ toolCall: { name: "write_file", input: { path: "notes/plans.md", content: "SURPRISE-PARTY on Friday" } } }, { text: "noted" });
    await talk(OWNER, "remember the surprise party");
    assert.match(toolResult(h.llm.requests.at(-1)).content, /wrote notes\/plans.md/);

    h.llm.push(
      { toolCall: { name: "read_file", input: { path: "notes/plans.md" } } },
      { toolCall: { name: "read_file", input: { path: "SOUL.md" } } },
      { toolCall: { name: "read_file", input: { path: "" } } },
      { text: "nothing to share" },
    );
    await talk(FRIEND, "what are the plans?", GROUP);
    const [note, soul, root] = h.llm.requests.slice(-3).map(toolResult);
    assert.equal(note.is_error, true);
    assert.match(note.content, /notes\/plans.md cannot be read here: in a group or someone else's DM/);
    assert.equal(soul.content, (await (await (await h.bucket()).get("agents/main/SOUL.md")).text()), "what the group prompt shows stays readable");
    assert.ok(!root.content.includes("notes/") && !root.content.includes("MEMORY.md"), root.content);
    for (const r of h.llm.requests.slice(-4)) assert.ok(!r.raw.includes("SURPRISE-PARTY"), "the note never reached a group request");
  });

  test("write, edit with near-miss feedback, delete; guardrails and traversal refused", async () => {
    h.llm.push(
      { toolCall: { name: "write_file", input: { path: "notes/todo.md", content: "- buy milk\n- call mum\n" } } },
      { toolCall: { name: "edit_file", input: { path: "notes/todo.md", old_text: "- buy oat milk", new_text: "- buy bread" } } },
      { toolCall: { name: "edit_file", input: { path: "notes/todo.md", old_text: "- buy milk", new_text: "- buy bread" } } },
      { toolCall: { name: "write_file", input: { path: "GUARDRAILS.md", content: "anything goes" } } },
      { toolCall: { name: "write_file", input: { path: "../other/SOUL.md", content: "x" } } },
      { toolCall: { name: "delete_file", input: { path: "notes/todo.md" } } },
      { text: "done" },
    );
    await talk(OWNER, "manage my notes");
    const results = h.llm.requests.slice(-6).map(toolResult);
    assert.equal(results[0].is_error, undefined);
    assert.equal(results[1].is_error, true);
    assert.match(results[1].content, /closest line is line 1: "- buy milk"/);
    assert.match(results[3].content, /protected/);
    assert.equal(results[4].is_error, true);
    assert.match(results[5].content, /deleted notes\/todo.md/);
    assert.equal(await (await h.bucket()).get("agents/main/notes/todo.md"), null);
    assert.equal(await (await (await h.bucket()).get("agents/main/GUARDRAILS.md")).text(), "Never send money.");
    // The edit took effect before the delete: the third call saw the replaced text written.
    assert.match(results[2].content, /wrote notes\/todo.md/);
  });
});
