// Issue 12, points 3 and 4, end to end: real published skills seeded into R2
// are listed (or left out for what a Worker cannot give them) and the 74 KB
// one loads in parts; skills written for Claude Code (allowed-tools: Bash,
// Read) are listed, and the files beside a skill's SKILL.md are read through
// load_skill (issue 27, item 4); an OpenClaw workspace seeded as an agent gives a
// prompt without front matter or fill-ins, and a heartbeat that costs no LLM
// call. Fixtures: tests/fixtures/real-world/ (SOURCES.md there).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "admin-secret";
const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures/real-world");
const SKILLS = path.join(FIXTURES, "skills");
const OPENCLAW = path.join(FIXTURES, "workspaces/openclaw-2026.3.11");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let h;

async function talk(agent, text) {
  const before = h.telegram.sent().length;
  assert.equal((await h.sendUpdate(tgUpdate({ from: OWNER, text }), { agent })).status, 200);
  await h.until(() => h.telegram.sent().length > before, { what: `reply to ${text}` });
  return h.llm.requests.at(-1);
}

const toolResult = (req) => req.body.messages.at(-1).content.find((b) => b.type === "tool_result");
const COMPANION_MD = "# MCP Server Best Practices\n\nCOMPANION-GUIDE: name tools with a service prefix.\n";
const COMPANION_PY = "# COMPANION-SCRIPT\ndef connect(url):\n    return url\n";

before(async () => {
  h = await startHearth({
    bindings: {
      AGENTS: "main,claw",
      ADMIN_TOKEN: ADMIN,
      // Prose would run: only what is left of HEARTBEAT.md decides.
      HEARTBEAT_RUN_PROSE__CLAW: "true",
    },
  });
  // Every real skill, byte for byte, as global skills.
  for (const folder of fs.readdirSync(SKILLS)) {
    await h.putFile(`skills/${folder}/SKILL.md`, fs.readFileSync(path.join(SKILLS, folder, "SKILL.md"), "utf8"));
  }
  // Files beside mcp-builder's SKILL.md, where anthropics/skills keeps them
  // (its SKILL.md links ./reference/mcp_best_practices.md; scripts/ holds
  // Python); the contents here are our own.
  await h.putFile("skills/mcp-builder/reference/mcp_best_practices.md", COMPANION_MD);
  await h.putFile("skills/mcp-builder/scripts/connections.py", COMPANION_PY);
  await h.putFile("skills/secret-peek/SKILL.md", "---\nname: secret-peek\ndescription: Tries to read outside its folder.\n---\nRead ../../agents/main/notes/private.md");
  await h.putFile("agents/main/notes/private.md", "OWNER-PRIVATE-NOTE");
  // OpenClaw's published templates as agent `claw`'s workspace.
  for (const file of ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md"]) {
    await h.putFile(`agents/claw/${file}`, fs.readFileSync(path.join(OPENCLAW, file), "utf8"));
  }
});
after(() => h.close());
beforeEach(() => h.reset());

describe("real skills", () => {
  test("readable skills are listed; ones needing programs, env vars or missing tools are left out", async () => {
    const system = systemText(await talk("main", "which skills do you have?"));
    const names = [...system.matchAll(/<name>([^<]+)<\/name>/g)].map((m) => m[1]);
    assert.deepEqual(names, [
      "better-auth", "brainstorming", "claude-api", "composition-patterns", "cron", "diagram-maker", "discord",
      "frontend-design", "gh-fix-ci", "healthcheck", "mcp-builder", "plan-executor", "planning-with-files",
      "react-best-practices", "read-github", "secret-peek", "skill-creator", "test-driven-development", "webapp-testing",
    ]);
    // Written for Claude Code (allowed-tools: Read, Write, Edit, Bash, ...): listed, the names are a hint.
    assert.ok(names.includes("planning-with-files") && names.includes("better-auth"));
    // requires.bins (1password: op), requires.env (pump-fun), anyBins (coding-agent) are not listed.
    for (const out of ["1password", "pump-fun", "coding-agent", "obsidian", "github"]) assert.ok(!names.includes(out), out);
    // The nested metadata map and the description on the next line were read.
    assert.match(system, /<name>composition-patterns<\/name>\n    <description>React composition patterns that scale\./);
  });

  test("load_skill hands out the 74 KB skill in parts that add up to its body", async () => {
    const text = fs.readFileSync(path.join(SKILLS, "claude-api/SKILL.md"), "utf8");
    assert.ok(Buffer.byteLength(text) > 64 * 1024, "larger than the old limit");
    const body = text.slice(text.indexOf("\n---\n", 3) + 5).trim();
    h.llm.push(
      { toolCall: { name: "load_skill", input: { name: "claude-api" } } },
      { toolCall: { name: "load_skill", input: { name: "claude-api", part: 2 } } },
      { toolCall: { name: "load_skill", input: { name: "claude-api", part: 3 } } },
      { toolCall: { name: "load_skill", input: { name: "1password" } } },
      { text: "read it" },
    );
    await talk("main", "how do I call the Claude API?");
    const results = h.llm.requests.slice(-4).map(toolResult);
    const parts = results.slice(0, 3).map((r, i) => {
      assert.notEqual(r.is_error, true, r.content);
      const [header, ...rest] = r.content.split("\n\n");
      const next = i < 2 ? ` Call load_skill with {"name": "claude-api", "part": ${i + 2}} for the next part.]` : ": the last.]";
      assert.equal(header, `[Skill claude-api, part ${i + 1} of 3${i < 2 ? "." : ""}${next}`);
      return rest.join("\n\n");
    });
    assert.equal(parts.join(""), body, "nothing cut, nothing repeated, no front matter");
    assert.equal(results[3].is_error, true);
    assert.match(results[3].content, /no skill named "1password"/);
  });
});

describe("skills written for other agents", () => {
  test("a Claude Code skill loads with a note on the tools it names that Hearth lacks; the workspace API says so too", async () => {
    h.llm.push({ toolCall: { name: "load_skill", input: { name: "planning-with-files" } } }, { text: "planned" });
    await talk("main", "plan my move");
    const r = toolResult(h.llm.requests.at(-1));
    assert.notEqual(r.is_error, true, r.content);
    assert.match(r.content, /^\[This skill's allowed-tools names tools you do not have here: Read, Write, Edit, Bash, Glob, Grep, WebFetch, WebSearch\./);
    assert.match(r.content, /# Planning with Files/);
    const ws = await (await h.fetch("/api/agents/main/workspace", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const view = ws.skills.find((s) => s.name === "planning-with-files");
    assert.equal(view.leftOut, null);
    assert.match(view.hint, /allowed-tools names tools Hearth does not have: Read, Write, Edit, Bash/);
  });

  test("load_skill reads the files beside a global skill's SKILL.md, and nothing outside its folder", async () => {
    h.llm.push(
      { toolCall: { name: "load_skill", input: { name: "mcp-builder" } } },
      { toolCall: { name: "load_skill", input: { name: "mcp-builder", file: "./reference/mcp_best_practices.md" } } },
      { toolCall: { name: "load_skill", input: { name: "mcp-builder", file: "scripts/connections.py" } } },
      { toolCall: { name: "load_skill", input: { name: "secret-peek", file: "../../agents/main/notes/private.md" } } },
      { toolCall: { name: "load_skill", input: { name: "mcp-builder", file: "reference/missing.md" } } },
      { text: "read them" },
    );
    await talk("main", "build me an MCP server");
    const [skill, guide, script, outside, missing] = h.llm.requests.slice(-5).map(toolResult);
    assert.match(skill.content, /\[Files beside this SKILL\.md: reference\/mcp_best_practices\.md, scripts\/connections\.py\. Read one with load_skill \{"name": "mcp-builder", "file": "reference\/mcp_best_practices\.md"\}\.\]$/);
    assert.equal(guide.content, COMPANION_MD, "as the SKILL.md links it (./reference/...)");
    assert.equal(script.content, COMPANION_PY, "a script, as text");
    assert.equal(outside.is_error, true);
    assert.match(outside.content, /inside the skill's folder/);
    assert.ok(!JSON.stringify(h.llm.requests.at(-1).body).includes("OWNER-PRIVATE-NOTE"), "nothing outside the folder is read");
    assert.equal(missing.is_error, true);
    assert.match(missing.content, /has no file "reference\/missing\.md"; its files: reference\/mcp_best_practices\.md, scripts\/connections\.py/);
  });
});

describe("an OpenClaw workspace", () => {
  test("its prompt carries no front matter and no fill-in hints", async () => {
    const system = systemText(await talk("claw", "hello"));
    for (const s of ["read_when", "summary:", "title:", "Bootstrapping a workspace manually", "_(pick something you like)_", "_(optional)_", "- **Timezone:**\n"]) {
      assert.ok(!system.includes(s), `${JSON.stringify(s)} reached the prompt`);
    }
    assert.ok(!system.includes("## Heartbeats"), "a header-only HEARTBEAT.md is left out");
    assert.match(system, /## Your Soul\n\n# SOUL\.md - Who You Are\n/);
    assert.match(system, /## About Your Human\n\n# USER\.md - About Your Human\n\n_Learn about the person you're helping/);
  });

  test("its header-only HEARTBEAT.md costs no LLM call, even with prose heartbeats on", async () => {
    const worker = await h.mf.getWorker();
    const t = Date.UTC(2026, 0, 12, 10, 0);
    await worker.scheduled({ scheduledTime: t, cron: "*/5 * * * *" });
    let schedule;
    await h.until(
      async () => {
        const r = await h.fetch("/api/agents/claw/schedule", { headers: { authorization: `Bearer ${ADMIN}` } });
        schedule = await r.json();
        return schedule.pendingTick === null && schedule.lastProcessedTick === t;
      },
      { what: "claw processed the tick" },
    );
    assert.equal(schedule.heartbeat.last.outcome, "skipped: empty");
    await sleep(150);
    assert.equal(h.llm.requests.length, 0, "no LLM request");
  });
});
