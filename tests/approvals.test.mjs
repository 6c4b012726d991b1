// Asking before acting, end to end in workerd: with APPROVE_TOOLS=web_fetch
// a web_fetch waits until the owner taps Approve on Telegram (the turn is
// parked in SQLite and survives a restart of workerd meanwhile), is refused
// on Deny (the model gets a tool error and still answers), and a call from
// a group asks the owner in their private chat, never in the group, where a
// tap by anyone else does nothing.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, tgUpdate, toolResults } from "./support/hearth.mjs";

/** A page web_fetch reads; counts its hits. */
async function startSite() {
  const hits = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("The hearth is warm today.");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { port: server.address().port, hits, url: (p) => `http://127.0.0.1:${server.address().port}${p}`, close: () => new Promise((r) => server.close(r)) };
}

const ADMIN = "approvals-admin-token";
let site, h;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-approvals-"));
before(async () => {
  site = await startSite();
  h = await startHearth({
    persist: dir,
    bindings: { APPROVE_TOOLS: "web_fetch", WEB_FETCH_ALLOW_HOSTS: `127.0.0.1:${site.port}`, ADMIN_TOKEN: ADMIN },
  });
});
after(async () => {
  await h?.close();
  await site?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const sentTo = (chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat);
/** The newest message with buttons the bot sent to `chat`. */
const prompts = (chat) => sentTo(chat).filter((r) => r.body.reply_markup?.inline_keyboard);
let updateId = 700000;

/** Taps Approve or Deny on `prompt` (a sendMessage the bot made) as `from`. Returns the message's id. */
async function tap(from, prompt, which) {
  const [key] = [...h.telegram.state.messages.entries()].find(([, m]) => m.text === prompt.body.text);
  const messageId = Number(key.split(":")[1]);
  const data = prompt.body.reply_markup.inline_keyboard[0][which === "approve" ? 0 : 1].callback_data;
  const res = await h.sendUpdate(h.telegram.tapUpdate({ from, chat: OWNER, messageId, data, updateId: updateId++ }));
  assert.equal(res.status, 200, await res.text());
  return messageId;
}

describe("a tool call that waits for the owner", () => {
  test("web_fetch is held until Approve, and the parked turn survives a restart", async () => {
    h.llm.push({ toolCall: { name: "web_fetch", input: { url: site.url("/weather") } } }, { text: "It says the hearth is warm." });
    const res = await h.sendUpdate(tgUpdate({ from: OWNER, text: "what does the weather page say?" }));
    assert.equal(res.status, 200);
    await h.until(() => prompts(OWNER).length === 1, { what: "the approval prompt" });
    const prompt = prompts(OWNER)[0];
    for (const part of ["Agent: main", "Tool: web_fetch", site.url("/weather"), "telegram chat 4242"]) {
      assert.ok(prompt.body.text.includes(part), `${part} in ${prompt.body.text}`);
    }
    assert.deepEqual(prompt.body.reply_markup.inline_keyboard[0].map((b) => b.text), ["✅ Approve", "❌ Deny"]);
    assert.equal(site.hits.length, 0, "nothing fetched before the owner says yes");
    assert.equal(h.llm.requests.length, 1);
    // The turn is parked: its message stays open, no request is held, and
    // workerd can go away meanwhile.
    assert.equal((await h.sessionStatus("agent:main:main")).open, 1);
    await h.restart();
    const mid = await tap(OWNER, prompt, "approve");
    await h.until(() => sentTo(OWNER).some((r) => r.body.text === "It says the hearth is warm."), { what: "the answer" });
    assert.deepEqual(site.hits, ["/weather"], "fetched once");
    const results = toolResults(h.llm.requests[1]);
    assert.equal(results.length, 1);
    assert.equal(results[0].isError, false);
    assert.match(results[0].text, /The hearth is warm today/);
    assert.equal(h.telegram.message(OWNER, mid).reply_markup.inline_keyboard[0][0].text, "✅ Approved");
    assert.equal(h.telegram.calls("answerCallbackQuery").at(-1).status, 200);
    await h.settle("agent:main:main");
  });

  test("Deny refuses it: the model is told and still answers", async () => {
    h.llm.reset();
    h.llm.push({ toolCall: { name: "web_fetch", input: { url: site.url("/news") } } }, { text: "My owner said no, so I did not look." });
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "and the news page?" }));
    await h.until(() => prompts(OWNER).length === 2, { what: "the second prompt" });
    await tap(OWNER, prompts(OWNER)[1], "deny");
    await h.until(() => sentTo(OWNER).some((r) => r.body.text === "My owner said no, so I did not look."), { what: "the answer" });
    assert.deepEqual(site.hits, ["/weather"], "/news was never fetched");
    const denied = toolResults(h.llm.requests[1]).at(-1);
    assert.equal(denied.isError, true);
    assert.match(denied.text, /denied/);
    await h.settle("agent:main:main");
  });

  test("a call from a group asks the owner privately; a tap by anyone else does nothing", async () => {
    h.llm.reset();
    h.llm.push({ toolCall: { name: "web_fetch", input: { url: site.url("/menu") } } }, { text: "Tonight: soup." });
    const mention = tgUpdate({ from: FRIEND, chat: GROUP, text: "@hearth_bot what's on the menu page?", entities: [{ type: "mention", offset: 0, length: 11 }] });
    await h.sendUpdate(mention);
    await h.until(() => prompts(OWNER).length === 3, { what: "the prompt in the owner's chat" });
    const prompt = prompts(OWNER)[2];
    assert.match(prompt.body.text, /telegram group -100123456, from Pat/);
    assert.equal(prompts(GROUP).length, 0, "never asked in the group");
    await h.until(() => sentTo(GROUP).some((r) => /asked my owner/.test(r.body.text)), { what: "the group told it waits" });
    // Someone else taps (a forged or forwarded callback): nothing happens.
    await tap(FRIEND, prompt, "approve");
    const answered = h.telegram.calls("answerCallbackQuery").at(-1);
    assert.equal(answered.body.text, "Only my owner can decide this.");
    assert.equal(site.hits.filter((p) => p === "/menu").length, 0);
    assert.equal(h.llm.requests.length, 1);
    await tap(OWNER, prompt, "approve");
    await h.until(() => sentTo(GROUP).some((r) => r.body.text === "Tonight: soup."), { what: "the answer in the group" });
    assert.equal(site.hits.filter((p) => p === "/menu").length, 1);
    // The console lists each request with its answer.
    const list = await (await h.fetch("/api/agents/main/approvals", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    assert.deepEqual(list.map((r) => [r.tool, r.decision, r.decidedBy]), [
      ["web_fetch", "approved", "telegram:4242"],
      ["web_fetch", "denied", "telegram:4242"],
      ["web_fetch", "approved", "telegram:4242"],
    ]);
    assert.equal(list[0].sessionKey, "agent:main:telegram:group:-100123456");
  });
});
