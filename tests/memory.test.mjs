// End to end: the agent's BM25 memory in the Agent object, reached from the
// Session objects by tool calls and by recall, in workerd, with persisted
// state that survives Miniflare being disposed and recreated.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, telegramTurn, tgUpdate, toolResults } from "./support/hearth.mjs";

const SECRET_NOTE = "The vault code is ZEBRA-7781";
let h;
let dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "hearth-memory-"));
  h = await startHearth({ persist: dir });
});
after(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);


const turn = (update, chat) => telegramTurn(h, update, chat);

const mention = (text) => tgUpdate({ from: FRIEND, chat: GROUP, text: `@hearth_bot ${text}`, entities: [{ type: "mention", offset: 0, length: 11 }] });

describe("memory", () => {
  test("an LLM tool call stores a note in the owner's main session; memory_get and the tool list work", async () => {
    h.llm.push({ toolCall: { name: "memory_add", input: { name: "vault-code", content: SECRET_NOTE } } }, { text: "saved" });
    const reqs = await turn(tgUpdate({ text: "please remember the code for the vault" }), OWNER);
    assert.equal(reqs.length, 2);
    const tools = reqs[0].body.tools.map((t) => t.name);
    assert.deepEqual(tools, [...tools].sort(), "tool list sorted");
    for (const t of ["memory_add", "memory_search", "memory_get", "what_do_i_know", "who_am_i", "my_stats"]) assert.ok(tools.includes(t), t);
    const result = toolResults(reqs[1]).at(-1);
    assert.equal(result.isError, false, result.text);
    assert.equal(JSON.parse(result.text).name, "vault-code");
    assert.equal(sentTo(OWNER).at(-1).body.text, "saved");

    h.llm.push({ toolCall: { name: "memory_add", input: { name: "vault-code", content: "again" } } }, { text: "hmm" });
    const dup = await turn(tgUpdate({ text: "store it once more" }), OWNER);
    const [again] = toolResults(dup[1]).slice(-1);
    assert.equal(again.isError, true);
    assert.match(again.text, /already used/);
  });

  test("a group session never receives a main-scope note, neither from a tool call nor from recall", async () => {
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "vault code ZEBRA" } } }, { toolCall: { name: "memory_get", input: { name: "vault-code" } } }, { text: "no idea" });
    const reqs = await turn(mention("what is the vault code?"), GROUP);
    assert.equal(reqs.length, 3);
    const tools = reqs[0].body.tools.map((t) => t.name);
    assert.ok(tools.includes("memory_search") && !tools.includes("what_do_i_know"));
    const results = toolResults(reqs[2]).slice(-2);
    assert.deepEqual(JSON.parse(results[0].text), { hits: [], conversations: [] });
    assert.equal(results[1].isError, true);
    for (const r of reqs) assert.ok(!r.raw.includes("ZEBRA-7781"), "a private note reached a group request");

    // What the group stores stays in the group's store.
    h.llm.push({ toolCall: { name: "memory_add", input: { name: "group-picnic", content: "Picnic on Saturday at the lake" } } }, { text: "noted" });
    await turn(mention("remember the picnic"), GROUP);
  });

  test("the store survives a restart; a later turn of the owner finds the note by search and by recall", async () => {
    await h.restart({ settle: ["agent:main:main", "agent:main:telegram:group:-100123456"] });
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "vault" } } }, { text: "found it" });
    const reqs = await turn(tgUpdate({ text: "what is the vault code?" }), OWNER);
    assert.equal(reqs.length, 2);
    const result = toolResults(reqs[1]).at(-1);
    assert.equal(result.isError, false, result.text);
    const hits = JSON.parse(result.text).hits;
    assert.equal(hits[0].name, "vault-code");
    assert.equal(hits[0].content, SECRET_NOTE);
    assert.ok(hits[0].score > 0);
    assert.ok(!hits.some((x) => x.name === "group-picnic"), "the group's note stays in the group");

    // Recall: the user's message carries the best note in a system-reminder; the system prompt does not.
    const user = reqs[0].body.messages.at(-1);
    const text = user.content.map((b) => b.text || "").join("\n");
    assert.match(text, /<system-reminder>Possibly relevant, from your memory[^]*\[vault-code\] The vault code is ZEBRA-7781/);
    assert.ok(!JSON.stringify(reqs[0].body.system).includes("ZEBRA"), "recall must not change the system prompt");

    // The group's own store also survived and still holds only the group's note.
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "picnic vault" } } }, { text: "ok" });
    const g = await turn(mention("when is the picnic?"), GROUP);
    const names = JSON.parse(toolResults(g[1]).at(-1).text).hits.map((x) => x.name);
    assert.deepEqual(names, ["group-picnic"]);
    for (const r of g) assert.ok(!r.raw.includes("ZEBRA-7781"));
  });

  test("my_stats reports the owner's recalls and the agent's conversations, null for what Hearth has not", async () => {
    h.llm.push({ toolCall: { name: "my_stats", input: {} } }, { text: "fine" });
    const reqs = await turn(tgUpdate({ text: "how are you doing?" }), OWNER);
    const v = JSON.parse(toolResults(reqs[1]).at(-1).text);
    assert.ok(v.recall_events_7d >= 1, JSON.stringify(v)); // the vault-code recall above
    assert.ok(v.sessions_total >= 2, JSON.stringify(v)); // the owner's DM and the group
    assert.equal(v.memories_stored, 1);
    for (const k of ["memories_promoted", "last_dream_ts", "top_concept_tags_7d"]) assert.equal(v[k], null, k);
  });
});

describe("memory settings", () => {
  let s;
  before(async () => {
    // Per agent: k1 = 0 makes a match score its idf whatever its frequency and length.
    s = await startHearth({ bindings: { MEMORY_BM25_K1__MAIN: "0" } });
  });
  after(async () => {
    await s.close();
  });

  test("MEMORY_BM25_K1 reaches the Agent object's scoring", async () => {
    s.llm.push(
      { toolCall: { name: "memory_add", input: { name: "vault-code", content: SECRET_NOTE } } },
      { toolCall: { name: "memory_search", input: { query: "vault" } } },
      { text: "done" },
    );
    const before = s.telegram.sent().length;
    const first = s.llm.requests.length;
    assert.equal((await s.sendUpdate(tgUpdate({ text: "remember the vault code" }))).status, 200);
    await s.until(() => s.telegram.sent().length > before, { what: "reply" });
    const result = toolResults(s.llm.requests.at(-1)).at(-1);
    assert.equal(s.llm.requests.length - first, 3);
    const hit = JSON.parse(result.text).hits[0];
    assert.equal(hit.name, "vault-code");
    // One note, "vault" in it: idf = ln(1 + 0.5 / 1.5). With the default k1 = 1.2 the two
    // occurrences (name and content) would score about 0.18 instead.
    assert.ok(Math.abs(hit.score - Math.log(4 / 3)) < 1e-6, `score ${hit.score}`);
  });
});
