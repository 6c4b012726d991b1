// End to end in workerd: the main session does not ask an empty memory on
// every turn (memory/recall.rs, `RecallGate`), and what is stored after a turn
// that found it empty is recalled on the next turn, whoever stored it (here the
// admin API, as the console does, and the main session's own tool call; every
// write reaches the Agent object, which tells the main session).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { OWNER, startHearth, telegramTurn, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "recall-gate-admin";
let h;
before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN } });
});
after(async () => {
  await h.close();
});

const turn = (text) => telegramTurn(h, tgUpdate({ text }), OWNER);
const userText = (req) => JSON.stringify(req.body.messages.at(-1));
const memoryCall = async (body) => {
  const r = await h.fetch("/api/agents/main/memory/call", {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await r.json();
  assert.equal(r.status, 200, JSON.stringify(json));
  return json;
};
const addNote = (name, content) =>
  memoryCall({ call: "op", store: "main", op: { op: "add", name, content, kind: "note", created_at: Date.now() } });
const recalls = (req, needle) => {
  const text = userText(req);
  return text.includes("Possibly relevant, from your memory") && text.includes(needle);
};

describe("recall with an empty memory", () => {
  test("a note added through the API after turns that found the memory empty is recalled on the next turn", async () => {
    for (const text of ["hello there", "how are you today?", "what is the vault code?"]) {
      const [req] = await turn(text);
      assert.ok(!userText(req).includes("Possibly relevant"), "nothing to recall yet");
    }
    await addNote("vault-code", "The vault code is ZEBRA-7781");
    const [req] = await turn("what is the vault code?");
    assert.ok(recalls(req, "ZEBRA-7781"), userText(req));
  });

  test("after every note is removed and the memory found empty again, the next note is recalled too", async () => {
    await memoryCall({ call: "op", store: "main", op: { op: "remove", name: "vault-code" } });
    const [empty] = await turn("what is the vault code?");
    assert.ok(!userText(empty).includes("ZEBRA"), "removed: not recalled");
    await turn("anything new?");
    await addNote("locker", "The gym locker code is 3301");
    const [req] = await turn("what is my gym locker code?");
    assert.ok(recalls(req, "3301"), userText(req));
  });

  test("a note the main session stores with its own tool call is recalled on its next turn", async () => {
    await memoryCall({ call: "op", store: "main", op: { op: "remove", name: "locker" } });
    await turn("what is my gym locker code?"); // empty again
    h.llm.push({ toolCall: { name: "memory_add", input: { name: "bike", content: "The bike lock combination is 4417" } } }, { text: "saved" });
    await turn("remember my bike lock combination is 4417");
    const [req] = await turn("what is my bike lock combination?");
    assert.ok(recalls(req, "4417"), userText(req));
  });
});
