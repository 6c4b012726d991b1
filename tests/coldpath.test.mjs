// The turn most users get: the objects were evicted (here: workerd restarted
// on the same storage) and the isolate is fresh. Its first turn must read
// nothing it already has, send the same prompt as before (the provider's
// cache keeps hitting), and still see an edit made meanwhile.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { FRIEND, OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const MAIN = "agent:main:main";
let h;
let dir;

async function talk(from, text) {
  const before = h.telegram.sent().length;
  assert.equal((await h.sendUpdate(tgUpdate({ from, text }))).status, 200);
  await h.until(() => h.telegram.sent().length > before, { what: `reply to ${text}` });
  return h.llm.requests.at(-1);
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-coldpath-"));
  h = await startHearth({ persist: dir });
  const today = new Date().toISOString().slice(0, 10);
  const files = {
    "agents/main/SOUL.md": "Calm and kind.",
    "agents/main/USER.md": "PRIVATE-USER",
    "agents/main/MEMORY.md": "PRIVATE-MEMORY",
    [`agents/main/memory/${today}.md`]: "PRIVATE-TODAY",
    "_catalog/defaults/workspace/AGENTS.md": "Be brief.",
    "skills/tidy/SKILL.md": "---\nname: tidy\ndescription: Tidies a list.\n---\nSort it.",
  };
  for (const [k, v] of Object.entries(files)) await h.putFile(k, v);
});
after(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("after an eviction the first turn reads only the agent's root listing, sends the same prompt and keeps the conversation", async () => {
  const first = await talk(OWNER, "remember the blue door");
  await h.restart({ settle: [MAIN] });
  const again = await talk(OWNER, "which door?");
  assert.equal(JSON.stringify(again.body.system), JSON.stringify(first.body.system), "byte-identical system prompt");
  assert.equal(JSON.stringify(again.body.tools), JSON.stringify(first.body.tools));
  assert.match(JSON.stringify(again.body.messages), /remember the blue door/, "the conversation goes on");
  assert.equal((await h.sessionStatus(MAIN)).workspaceR2Ops, 1, "one listing; nothing read again");
  // A new chat after the restart: its Session object is new, the workspace is handed over.
  const dm = await talk(FRIEND, "hello");
  for (const p of ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-TODAY"]) assert.ok(!dm.raw.includes(p), `${p} left for a friend`);
  assert.match(systemText(dm), /Calm and kind\./);
  assert.equal((await h.sessionStatus(`agent:main:telegram:dm:${FRIEND}`)).workspaceR2Ops, 1);
});

test("an edit made while the objects were evicted is seen on the first turn after", async () => {
  await h.restart({ settle: [MAIN] });
  await h.putFile("agents/main/SOUL.md", "Calm, kind and EDITED-WHILE-AWAY.");
  const req = await talk(OWNER, "who are you?");
  assert.match(systemText(req), /EDITED-WHILE-AWAY/);
  assert.equal((await h.sessionStatus(MAIN)).workspaceR2Ops, 2, "the listing and the edited file");
});
