// STYLE.md end to end (seed 004: the agent's voice): it reaches the system
// prompt right after SOUL.md and before memory and skills, in the owner's
// DMs and in a group alike, byte-stable from turn to turn; through the
// overlay (agent → template → defaults) with placeholders filled; listed by
// the workspace API the console draws. Without a STYLE.md the prompt is the
// same as before the file existed.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "admin-secret";
const auth = { authorization: `Bearer ${ADMIN}` };
const sectionTitles = (system) => [...system.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
const STYLE_SECTION = "## Communication Style\n\n";

describe("STYLE.md in the prompt", () => {
  let h;
  /** One turn in a chat (a group when `chat` < 0); the LLM request it made. */
  async function talk(from, text, chat) {
    const target = chat ?? from;
    const count = () => h.telegram.sent().filter((r) => Number(r.body.chat_id) === target).length;
    const before = count();
    const entities = chat && chat < 0 ? [{ type: "mention", offset: 0, length: 11 }] : undefined;
    const body = chat && chat < 0 ? `@hearth_bot ${text}` : text;
    assert.equal((await h.sendUpdate(tgUpdate({ from, chat, text: body, entities }))).status, 200);
    await h.until(() => count() > before, { what: `reply to ${text}` });
    return h.llm.requests.at(-1);
  }

  before(async () => {
    h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN } });
    const files = {
      "agents/main/SOUL.md": "SOUL-MARK: calm and kind.",
      "agents/main/IDENTITY.md": "- **Name:** Ember\n- **Emoji:** 🔥",
      "agents/main/USER.md": "USER-MARK",
      "agents/main/AGENTS.md": "AGENTS-MARK",
      "agents/main/MEMORY.md": "MEMORY-MARK",
      "agents/main/TOOLS.md": "TOOLS-MARK",
      "skills/alpha/SKILL.md": "---\nname: alpha\ndescription: SKILL-MARK.\n---\nbody",
    };
    for (const [k, v] of Object.entries(files)) await h.putFile(k, v);
  });
  after(() => h.close());
  beforeEach(() => h.reset());

  test("a marker in STYLE.md reaches the prompt right after SOUL.md, in DMs and groups, byte-stable; without it nothing changes", async () => {
    const without = systemText(await talk(OWNER, "before any style"));
    assert.ok(!without.includes("Communication Style"), "no file, no section");

    const STYLE = "# Style\n\nSTYLE-MARK: short sentences, British spelling, no emoji.";
    await h.putFile("agents/main/STYLE.md", STYLE);
    const owner = systemText(await talk(OWNER, "with a style"));
    assert.deepEqual(sectionTitles(owner), [
      "Core", "Your Soul", "Communication Style", "Your Identity", "About Your Human", "Operating Instructions",
      "Long-Term Memory", "Tool Notes", "Skills (Mandatory Scan)", "Runtime",
    ]);
    const at = (m) => owner.indexOf(m);
    assert.ok(at("SOUL-MARK") < at("STYLE-MARK") && at("STYLE-MARK") < at("MEMORY-MARK") && at("MEMORY-MARK") < at("SKILL-MARK"), "soul, style, memory, skills");
    assert.ok(owner.includes(`${STYLE_SECTION}${STYLE}\n\n## Your Identity`), "the file as written, in its own section");
    // The style section is the only difference a STYLE.md makes.
    assert.equal(owner.replace(`${STYLE_SECTION}${STYLE}\n\n`, ""), without);

    // Prompt caching: the next turn's system prompt is the same bytes.
    const again = await talk(OWNER, "and again");
    assert.equal(systemText(again), owner);

    // A group hears the same voice (private files stay out).
    const group = systemText(await talk(FRIEND, "group hello", GROUP));
    assert.deepEqual(sectionTitles(group), [
      "Core", "Your Soul", "Communication Style", "Your Identity", "Operating Instructions", "Tool Notes", "Skills (Mandatory Scan)", "Runtime",
    ]);
    assert.ok(group.includes(`${STYLE_SECTION}${STYLE}\n\n## Your Identity`));
    assert.ok(group.indexOf("STYLE-MARK") < group.indexOf("SKILL-MARK"));
    for (const p of ["USER-MARK", "MEMORY-MARK"]) assert.ok(!group.includes(p), `${p} leaked`);
    // Someone else's DM too.
    assert.ok(systemText(await talk(FRIEND, "dm hello")).includes("STYLE-MARK"));

    // Deleted again: the prompt is what it was before the file.
    await (await h.bucket()).delete("agents/main/STYLE.md");
    assert.equal(systemText(await talk(OWNER, "style gone")), without);
  });

  test("STYLE.md counts against the per-file budget like the other files", async () => {
    await h.putFile("agents/main/STYLE.md", `LONG-STYLE ${"plain words. ".repeat(1500)}`);
    try {
      const system = systemText(await talk(OWNER, "long style"));
      const body = system.split(STYLE_SECTION)[1].split("\n\n## ")[0];
      assert.equal([...body].length, 12000, "cut at 12,000 characters");
      assert.ok(body.endsWith("[truncated]"));
    } finally {
      await (await h.bucket()).delete("agents/main/STYLE.md");
    }
  });
});

describe("STYLE.md through the overlay and the workspace API", () => {
  let h;
  const generate = async (agent, text) => {
    const r = await h.fetch(`/api/agents/${agent}/generate`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: text }], threadId: "style-check" }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    return systemText(h.llm.requests.at(-1));
  };
  const api = async (method, path, body) => {
    const r = await h.fetch(path, { method, headers: auth, ...(body === undefined ? {} : { body }) });
    return { status: r.status, body: await r.json() };
  };
  const sourceOf = async (agent) => (await api("GET", `/api/agents/${agent}/workspace`)).body.files.find((f) => f.path === "STYLE.md")?.source;

  before(async () => {
    h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, AGENTS: "main,work", TEMPLATE__WORK: "concierge", HUMAN_NAME: "Ines" } });
    await h.putFile("_catalog/defaults/workspace/SOUL.md", "Default soul.");
    await h.putFile("_catalog/defaults/workspace/STYLE.md", "DEFAULT-STYLE: neutral and helpful.");
    await h.putFile("_catalog/concierge/workspace/IDENTITY.md", "- **Name:** Conci");
    await h.putFile("_catalog/concierge/workspace/STYLE.md", "TEMPLATE-STYLE: {{AGENT_NAME}} speaks formally to {{HUMAN_NAME}}.\n- **Sign-off:** _(your sign-off)_");
  });
  after(() => h.close());

  test("agent → template → defaults, placeholders filled, hints left out; the workspace API lists where it comes from", async () => {
    // main has no template: the defaults' STYLE.md.
    assert.match(await generate("main", "hello"), /## Communication Style\n\nDEFAULT-STYLE: neutral and helpful\.\n/);
    assert.equal(await sourceOf("main"), "defaults");
    // work is on the concierge template: its STYLE.md, placeholders filled, the unfilled hint left out.
    const work = await generate("work", "hello");
    assert.match(work, /## Communication Style\n\nTEMPLATE-STYLE: Conci speaks formally to Ines\.\n\n## Your Identity/);
    assert.ok(!work.includes("DEFAULT-STYLE") && !work.includes("sign-off"));
    assert.equal(await sourceOf("work"), "template");

    // An override in the agent's layer (as the console saves one) wins on the next turn.
    assert.equal((await api("PUT", "/api/agents/work/workspace/STYLE.md", "OWN-STYLE: playful.")).status, 200);
    assert.match(await generate("work", "again"), /## Communication Style\n\nOWN-STYLE: playful\.\n/);
    assert.equal(await sourceOf("work"), "agent");
    const tree = (await api("GET", "/api/agents/work/workspace")).body.files.filter((f) => !f.path.includes("/")).map((f) => f.path);
    assert.ok(tree.includes("STYLE.md") && tree.includes("SOUL.md") && tree.includes("IDENTITY.md"), `listed with the others: ${tree}`);
    // Deleting the override inherits the template's again.
    assert.equal((await api("DELETE", "/api/agents/work/workspace/STYLE.md")).status, 200);
    assert.match(await generate("work", "once more"), /TEMPLATE-STYLE: Conci/);
    assert.equal(await sourceOf("work"), "template");
  });
});
