// End to end in workerd: every write to an agent's workspace keeps the
// version it replaced, with who and why (the agent's tools, the admin API,
// a pin accept, `npm run seed --force`; dreaming is in dreams.test.mjs),
// the admin API lists, reads, diffs and restores versions, the owner's
// `/undo` reverts the agent's last change, retention is bounded.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { seedBucket } from "../scripts/seed.mjs";
import { OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "history-admin";
const auth = { authorization: `Bearer ${ADMIN}` };
const sha = (t) => createHash("sha256").update(t, "utf8").digest("hex");

let h;
before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, HEARTBEAT_ENABLED: "false", HISTORY_KEEP_VERSIONS: "4", TEMPLATE: "concierge" } });
  await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Be careful. (v1)");
});
after(() => h.close());

async function api(method, p, body) {
  const r = await h.fetch(p, { method, headers: auth, ...(body === undefined ? {} : { body }) });
  const t = await r.text();
  let json;
  try {
    json = JSON.parse(t);
  } catch {
    json = null;
  }
  return { status: r.status, text: t, json };
}

async function text(key) {
  const o = await (await h.bucket()).get(key);
  return o ? o.text() : null;
}

/** The owner's message whose turn runs `steps`; waits for the reply. */
async function say(t, steps = []) {
  const sent = h.telegram.sent().length;
  h.llm.push(...steps);
  assert.equal((await h.sendUpdate(tgUpdate({ text: t }))).status, 200);
  await h.until(() => h.telegram.sent().length > sent, { what: `reply to ${t}` });
  return h.telegram.sent().at(-1).body.text;
}

const tool = (name, input) => ({ toolCall: { name, input } });
const versions = async (file) => (await api("GET", `/api/agents/main/history/${file}`)).json.versions;

describe("workspace history", () => {
  test("the agent's writes, edits and deletes keep what they replaced, with who and why", async () => {
    await h.putFile("agents/main/USER.md", "# User\nOlga likes tea.\n");
    await say("I drink coffee now", [tool("edit_file", { path: "USER.md", old_text: "tea", new_text: "coffee" }), { text: "noted" }]);
    await say("make a plan", [tool("write_file", { path: "notes/plan.md", content: "1. water plants\n" }), { text: "done" }]);
    await say("drop the plan", [tool("delete_file", { path: "notes/plan.md" }), { text: "gone" }]);
    const user = await versions("USER.md");
    assert.equal(user.length, 1);
    assert.deepEqual([user[0].actor, user[0].why, user[0].previous, user[0].sha256], ["agent", "edit_file", sha("# User\nOlga likes tea.\n"), sha("# User\nOlga likes coffee.\n")]);
    // The replaced version is readable by its hash, and the change by its rev.
    const before = await api("GET", `/api/agents/main/history/USER.md?version=sha256:${user[0].previous}`);
    assert.equal(before.text, "# User\nOlga likes tea.\n");
    const plan = await versions("notes/plan.md");
    assert.deepEqual(plan.map((c) => [c.why, c.sha256 === null, c.previous === null]), [["delete_file", true, false], ["write_file", false, true]]);
    const recent = (await api("GET", "/api/agents/main/history?limit=3")).json.changes;
    assert.deepEqual(recent.map((c) => [c.path, c.why]), [["notes/plan.md", "delete_file"], ["notes/plan.md", "write_file"], ["USER.md", "edit_file"]]);
  });

  test("the owner's /undo reverts the agent's last change and says what it reverted", async () => {
    // The last agent change deleted notes/plan.md: /undo brings it back.
    const told = await say("/undo");
    assert.match(told, /Undone: restored notes\/plan\.md: I had deleted it \(delete_file,/);
    assert.equal(await text("agents/main/notes/plan.md"), "1. water plants\n");
    // Again: the write before it (the file is deleted again), then the edit of USER.md.
    assert.match(await say("/undo"), /deleted notes\/plan\.md again: I had created it/);
    assert.equal(await text("agents/main/notes/plan.md"), null);
    assert.match(await say("/undo"), /put USER\.md back as it was: I had changed it \(edit_file/);
    assert.equal(await text("agents/main/USER.md"), "# User\nOlga likes tea.\n");
    assert.match(await say("/undo"), /Nothing to undo/);
    const undo = (await versions("USER.md"))[0];
    assert.equal(undo.actor, "owner");
    assert.match(undo.why, /^\/undo of the agent's edit_file/);
  });

  test("the admin API writes, lists, diffs and restores; a restore is a new version", async () => {
    const put = (body, why) => api("PUT", `/api/agents/main/files/SOUL.md?why=${encodeURIComponent(why)}`, body);
    assert.equal((await put("# Soul\nCalm.\n", "first")).status, 200);
    assert.equal((await put("# Soul\nCalm and warm.\n", "warmer")).status, 200);
    const same = await put("# Soul\nCalm and warm.\n", "again");
    assert.equal(same.json.changed, false, "the same bytes are no new version");
    const v = await versions("SOUL.md");
    assert.deepEqual(v.map((c) => [c.actor, c.why]), [["owner", "warmer"], ["owner", "first"]]);
    const diff = await api("GET", `/api/agents/main/history/SOUL.md?diff=${v[1].rev}&to=current`);
    assert.equal(diff.status, 200);
    assert.match(diff.text, /^--- SOUL\.md@\d{13}-\w+\n\+\+\+ SOUL\.md \(current\)\n@@ -1,2 \+1,2 @@\n # Soul\n-Calm\.\n\+Calm and warm\.\n$/);
    const restored = await api("POST", "/api/agents/main/history/SOUL.md", JSON.stringify({ restore: v[1].rev, why: "too warm" }));
    assert.equal(restored.status, 200, restored.text);
    assert.equal(await text("agents/main/SOUL.md"), "# Soul\nCalm.\n");
    const after = await versions("SOUL.md");
    assert.equal(after.length, 3);
    assert.match(after[0].why, new RegExp(`^restore of ${after[2].rev}: too warm$`));
    assert.equal(after[0].previous, sha("# Soul\nCalm and warm.\n"));
    // Bad requests are clear errors.
    assert.equal((await api("GET", "/api/agents/main/history/SOUL.md?version=nonsense")).status, 400);
    assert.equal((await api("GET", "/api/agents/main/history/SOUL.md?version=0000000000001-deadbeef")).status, 404);
    assert.equal((await api("GET", "/api/agents/main/history/%2e%2e%2fx")).status, 400, "no climbing out");
    assert.equal((await h.fetch("/api/agents/main/history/SOUL.md")).status, 401);
  });

  test("accepting a pinned update and seeding with --force are kept too", async () => {
    // Pins are taken on first status; then the template moves and the admin accepts.
    assert.equal((await api("GET", "/api/agents/main/pins")).status, 200);
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Be very careful. (v2)");
    assert.equal((await api("POST", "/api/agents/main/pins/GUARDRAILS.md/accept")).status, 200);
    const g = await versions("GUARDRAILS.md");
    assert.deepEqual([g[0].actor, g[0].previous, g[0].sha256], ["pins", sha("Be careful. (v1)"), sha("Be very careful. (v2)")]);
    assert.match(g[0].why, /accepted template concierge's GUARDRAILS\.md/);

    // npm run seed -- --agent main --dir … --force, into this bucket.
    const dir = mkdtempSync(path.join(tmpdir(), "hearth-seed-"));
    try {
      writeFileSync(path.join(dir, "SOUL.md"), "# Soul\nSeeded.\n");
      const done = await seedBucket(await h.bucket(), { agent: "main", dir, prefix: "agents/main/", force: true });
      assert.deepEqual(done.uploaded, ["agents/main/SOUL.md"]);
      const again = await seedBucket(await h.bucket(), { agent: "main", dir, prefix: "agents/main/", force: true });
      assert.deepEqual(again.unchanged, ["agents/main/SOUL.md"], "identical content: no new version");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const s = await versions("SOUL.md");
    assert.deepEqual([s[0].actor, s[0].why, s[0].previous], ["seed", "npm run seed --force", sha("# Soul\nCalm.\n")]);
    // The Worker reads what the script wrote: the replaced version, and a restore of it.
    assert.equal((await api("GET", `/api/agents/main/history/SOUL.md?version=sha256:${s[0].previous}`)).text, "# Soul\nCalm.\n");
    const r = await api("POST", "/api/agents/main/history/SOUL.md", JSON.stringify({ restore: `sha256:${s[0].previous}` }));
    assert.equal(r.status, 200, r.text);
    assert.equal(await text("agents/main/SOUL.md"), "# Soul\nCalm.\n");
  });

  test("retention keeps the last HISTORY_KEEP_VERSIONS changes of a file", async () => {
    for (let i = 1; i <= 6; i++) {
      assert.equal((await api("PUT", "/api/agents/main/files/TOOLS.md", `tools v${i}\n`)).status, 200);
    }
    const v = await versions("TOOLS.md");
    assert.equal(v.length, 4);
    assert.deepEqual(v.map((c) => c.size), [9, 9, 9, 9]);
    const oldest = await api("GET", `/api/agents/main/history/TOOLS.md?version=${v[3].rev}`);
    assert.equal(oldest.text, "tools v3\n", "v1 and v2 are no longer kept");
    const all = (await api("GET", "/api/agents/main/history?limit=200")).json.changes.filter((c) => c.path === "TOOLS.md");
    assert.equal(all.length, 4, "the agent-wide log follows the file's retention");
  });
});
