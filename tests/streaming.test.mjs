// End to end: chats see the answer while the model writes it. Telegram
// private chats by drafts (sendMessageDraft), groups by one silent message
// edited as it grows and removed once the answer is sent, Discord by editing
// the deferred answer; the answer itself is sent as always.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { discordKeys, snowflake, startDiscord } from "./support/discord.mjs";

const WORDS = "The quick brown fox jumps over the lazy dog and keeps on running far away";
const DISCORD_OWNER = "100000000000000001";

let h;
let discord;
let keys;
before(async () => {
  discord = await startDiscord();
  keys = discordKeys();
  h = await startHearth({
    bindings: {
      AGENTS: "main,quiet",
      STREAM_REPLIES_INTERVAL_MS: "100",
      STREAM_REPLIES__QUIET: "off",
      STREAM_REPLIES_GROUPS__QUIET: "off",
      DISCORD_PUBLIC_KEY: keys.publicHex,
      DISCORD_APPLICATION_ID: discord.appId,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_API_BASE: discord.base,
      OWNER_IDS: `telegram:${OWNER},discord:${DISCORD_OWNER}`,
    },
  });
});
after(async () => {
  await h.close();
  await discord.close();
});
beforeEach(() => {
  h.reset();
  discord.reset();
});

const mention = (text) =>
  tgUpdate({ from: FRIEND, chat: GROUP, text: `@hearth_bot ${text}`, entities: [{ type: "mention", offset: 0, length: 11 }] });
const slowly = (text = WORDS) => ({ text, pieceDelayMs: 60 });
const calls = (method) => h.telegram.calls(method);

describe("telegram", () => {
  test("a private chat sees a draft grow, then gets the answer as one message", async () => {
    h.llm.push(slowly());
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "tell me about the fox" }));
    await h.telegram.untilSent(1);
    const drafts = calls("sendMessageDraft");
    assert.ok(drafts.length >= 2, `drafts: ${drafts.length}`);
    const ids = new Set(drafts.map((d) => d.body.draft_id));
    assert.equal(ids.size, 1, "one draft, animated");
    assert.notEqual([...ids][0], 0);
    for (const d of drafts) assert.ok(WORDS.startsWith(d.body.text), `a draft shows the answer so far: ${d.body.text}`);
    assert.ok(drafts[0].body.text.length < WORDS.length, "the first draft came before the answer was complete");
    const sent = h.telegram.sent();
    assert.equal(sent.length, 1);
    assert.equal(sent[0].body.text, WORDS);
    assert.ok(drafts.every((d) => d.at <= sent[0].at), "no draft after the answer");
    assert.equal(h.llm.requests[0].body.stream, true);
  });

  test("a group sees one silent message grow, replaced by the answer", async () => {
    h.llm.push(slowly());
    await h.sendUpdate(mention("tell me about the fox"));
    await h.until(() => calls("deleteMessage").length === 1, { what: "the preview removed" });
    const [preview, answer] = h.telegram.sent();
    assert.equal(preview.body.disable_notification, true, "the preview does not notify");
    assert.ok(WORDS.startsWith(preview.body.text));
    assert.equal(answer.body.text, WORDS);
    assert.ok(answer.body.reply_parameters, "the answer replies to the question as before");
    const edits = calls("editMessageText");
    assert.ok(edits.length >= 1, "edited as it grew");
    assert.ok(edits.every((e) => WORDS.startsWith(e.body.text)));
    assert.ok(calls("deleteMessage")[0].at >= answer.at, "removed after the answer was sent");
    assert.deepEqual(h.telegram.shown(GROUP), [WORDS], "the chat ends with the answer only");
    assert.equal(calls("sendMessageDraft").length, 0, "groups cannot have drafts");
  });

  test("a chat that refuses drafts gets an edited message instead", async () => {
    h.telegram.fail("sendMessageDraft", 400, { ok: false, error_code: 400, description: "Bad Request: TEXTDRAFT_PEER_INVALID" });
    h.llm.push(slowly());
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "go on" }));
    await h.until(() => calls("deleteMessage").length === 1, { what: "the preview removed" });
    assert.equal(calls("sendMessageDraft").length, 1, "asked once, then edits");
    assert.deepEqual(h.telegram.shown(OWNER), [WORDS]);
  });

  test("a rate-limited preview waits as Telegram asks instead of editing on", async () => {
    h.telegram.fail("editMessageText", 429, { ok: false, error_code: 429, description: "Too Many Requests: retry after 30", parameters: { retry_after: 30 } });
    h.llm.push(slowly());
    await h.sendUpdate(mention("and again"));
    await h.until(() => calls("deleteMessage").length === 1, { what: "the preview removed" });
    assert.equal(calls("editMessageText").length, 1, "no edit within the 30 s asked for");
    assert.deepEqual(h.telegram.shown(GROUP), [WORDS]);
  });

  test("STREAM_REPLIES=off: no preview, just the answer", async () => {
    h.llm.push(slowly());
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "quietly" }), { agent: "quiet" });
    await h.telegram.untilSent(1);
    assert.equal(calls("sendMessageDraft").length + calls("editMessageText").length, 0);
    assert.equal(h.llm.requests[0].body.stream, undefined, "nobody watches: one plain call");
  });

  test("a stream that breaks mid-answer is not shown twice", async () => {
    h.llm.push({ ...slowly(), breakAfter: 6 });
    h.llm.push({ text: WORDS, pieceDelayMs: 20 });
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "again" }));
    await h.telegram.untilSent(1);
    for (const d of calls("sendMessageDraft")) assert.ok(WORDS.startsWith(d.body.text), d.body.text);
    assert.equal(h.telegram.sent().length, 1);
    assert.equal(h.telegram.sent()[0].body.text, WORDS);
  });
});

describe("discord", () => {
  test("the deferred answer is edited as it grows, then holds the answer", async () => {
    h.llm.push(slowly());
    const id = snowflake();
    const user = { id: DISCORD_OWNER, username: "olga", global_name: "Olga", discriminator: "0", avatar: null };
    const i = {
      id, application_id: discord.appId, token: `tok-${id}`, type: 2, version: 1, locale: "en-US",
      channel_id: "400000000000000001", channel: { id: "400000000000000001", type: 1, recipients: [user] }, user, context: 1,
      data: { id: "1250000000000000001", name: "ask", type: 1, options: [{ name: "prompt", type: 3, value: "fox?" }] },
    };
    const raw = JSON.stringify(i);
    const r = await h.mf.dispatchFetch("http://hearth.test/discord/main", {
      method: "POST",
      headers: { "content-type": "application/json", ...keys.sign(raw) },
      body: raw,
    });
    assert.deepEqual(await r.json(), { type: 5 });
    await h.until(() => discord.calls("original").some((c) => c.body.content === WORDS), { what: "the answer" });
    const edits = discord.calls("original");
    assert.ok(edits.length >= 2, `edits: ${edits.length}`);
    for (const e of edits) assert.ok(WORDS.startsWith(e.body.content), e.body.content);
    assert.equal(edits.at(-1).body.content, WORDS);
    assert.equal(discord.calls("followup").length, 0);
  });
});
