// End to end: Discord interactions → Session object → LLM → Discord webhook
// edits, in workerd, against a Discord API stand-in that records requests.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth, systemText } from "./support/hearth.mjs";
import { discordKeys, snowflake, startDiscord } from "./support/discord.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OWNER = "100000000000000001";
const FRIEND = "100000000000000002";
const STRANGER = "100000000000000009";
const GUILD = "200000000000000001";
const CHANNEL = "300000000000000001"; // allowed guild channel
const OTHER_CHANNEL = "300000000000000002"; // not allowed
const THREAD = "300000000000000011"; // a thread under CHANNEL
const dmChannel = (user) => "4" + user.slice(1);

let h;
let discord;
let keys;
before(async () => {
  discord = await startDiscord();
  keys = discordKeys();
  h = await startHearth({
    bindings: {
      DISCORD_PUBLIC_KEY: keys.publicHex,
      DISCORD_APPLICATION_ID: discord.appId,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_API_BASE: discord.base,
      OWNER_IDS: `telegram:4242,discord:${OWNER}`,
      ALLOW_FROM: `telegram:777,discord:${FRIEND},discord:${CHANNEL}`,
      // Agents for the deadline tests (DISCORD_TURN_DEADLINE_MS is a test-only
      // knob) and one whose configuration is broken. `nobot` has no bot token
      // (nothing to post with once an interaction token is dead) and short
      // waits between retries (DELIVERY_MAX_WAIT_MS, tests only).
      AGENTS: "main,fast,slow,broken,nobot",
      ADMIN_TOKEN: "discord-admin",
      USAGE_SETTLE_MS: "0",
      DISCORD_TURN_DEADLINE_MS__FAST: "1000",
      DISCORD_TURN_DEADLINE_MS__SLOW: "3600000",
      DISCORD_TURN_DEADLINE_MS__NOBOT: "3600000",
      DISCORD_BOT_TOKEN__NOBOT: "",
      DELIVERY_MAX_WAIT_MS__NOBOT: "300",
      LLM_PROVIDER__BROKEN: "gemini",
    },
  });
  await h.putFile("agents/main/SOUL.md", "# Soul\nI am Ember.");
  await h.putFile("agents/main/MEMORY.md", "- PRIVATE-MEMORY-FACT");
});
after(async () => {
  await h.close();
  await discord.close();
});
beforeEach(() => {
  h.reset();
  discord.reset();
});

/** An APPLICATION_COMMAND interaction as Discord sends it. */
function command(name, { user = OWNER, guild, channel, thread, options = [], resolved, id = snowflake(), token } = {}) {
  const u = { id: user, username: `user${user.slice(-2)}`, global_name: user === OWNER ? "Olga" : null, discriminator: "0", avatar: null };
  const i = {
    app_permissions: "562949953601536",
    application_id: discord.appId,
    authorizing_integration_owners: { 0: GUILD },
    entitlements: [],
    id,
    locale: "en-US",
    token: token ?? `tok-${id}`,
    type: 2,
    version: 1,
    data: { id: "1250000000000000001", name, type: 1, options, ...(resolved ? { resolved } : {}) },
  };
  if (guild) {
    const ch = channel ?? CHANNEL;
    Object.assign(i, {
      guild_id: guild,
      guild_locale: "en-US",
      channel_id: thread ?? ch,
      // A text channel's parent is its category; a thread's (type 11) its channel.
      channel: thread
        ? { id: thread, type: 11, guild_id: guild, parent_id: ch, name: "a thread", thread_metadata: { archived: false } }
        : { id: ch, type: 0, guild_id: guild, parent_id: "500000000000000001", name: "general" },
      member: { user: u, roles: [], permissions: "1128248290438721", nick: null, joined_at: "2024-01-01T00:00:00.000000+00:00" },
      context: 0,
    });
  } else {
    const ch = channel ?? dmChannel(user);
    Object.assign(i, { channel_id: ch, channel: { id: ch, type: 1, recipients: [u] }, user: u, context: 1 });
  }
  return i;
}
const ask = (prompt, opts) => command("ask", { ...opts, options: [{ name: "prompt", type: 3, value: prompt }] });

async function post(body, { headers, sign = true, agent = "main" } = {}) {
  const raw = typeof body === "string" ? body : JSON.stringify(body);
  const t0 = performance.now();
  const res = await h.mf.dispatchFetch(`http://hearth.test/discord/${agent}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(sign ? keys.sign(raw) : {}), ...headers },
    body: raw,
  });
  const ms = performance.now() - t0;
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text, ms };
}

/** A real interaction body (tests/fixtures/real-world/discord/, sources in SOURCES.md). */
const fixture = (name) => JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/real-world/discord", name), "utf8"));

const tokenOf = (r) => r.params.token;
const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

describe("discord interactions endpoint", () => {
  test("PING is answered with PONG", async () => {
    const r = await post({ id: snowflake(), application_id: discord.appId, type: 1, token: "ping-token", version: 1 });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { type: 1 });
  });

  test("bad, missing or malformed signatures are 401 and start no turn", async () => {
    const body = JSON.stringify(ask("intruder"));
    const good = keys.sign(body);
    const other = discordKeys().sign(body);
    const cases = {
      "someone else's key": other,
      "tampered body": keys.sign(body.replace("intruder", "intrudes")),
      "tampered timestamp": { ...good, "X-Signature-Timestamp": String(Number(good["X-Signature-Timestamp"]) + 1) },
      "truncated signature": { ...good, "X-Signature-Ed25519": good["X-Signature-Ed25519"].slice(0, 100) },
      "non-hex signature": { ...good, "X-Signature-Ed25519": "zz" + good["X-Signature-Ed25519"].slice(2) },
      "missing signature": { "X-Signature-Timestamp": good["X-Signature-Timestamp"] },
      "missing timestamp": { "X-Signature-Ed25519": good["X-Signature-Ed25519"] },
    };
    for (const [what, headers] of Object.entries(cases)) {
      const r = await post(body, { sign: false, headers });
      assert.equal(r.status, 401, what);
    }
    // Not JSON but unsigned: still 401, not 400 (nothing is parsed before the check).
    assert.equal((await post("{not json", { sign: false })).status, 401);
    // Signed garbage is a 400.
    assert.equal((await post("{not json")).status, 400);
    await settle();
    assert.equal(h.llm.requests.length, 0);
    assert.equal(discord.requests.length, 0);
  });

  test("the signature is checked before the configuration: 401 for a broken agent, no agent ids without a signature", async () => {
    const body = JSON.stringify(ask("probe"));
    const bad = { ...keys.sign(body), "X-Signature-Ed25519": "00".repeat(64) };
    const broken = await post(body, { agent: "broken", sign: false, headers: bad });
    assert.equal(broken.status, 401, "Discord's bad-signature probe gets 401 even with a broken config");
    const brokenSigned = await post(body, { agent: "broken" });
    assert.equal(brokenSigned.status, 500);
    assert.match(brokenSigned.text, /LLM_PROVIDER/);
    const unknown = await post(body, { agent: "nobody", sign: false, headers: bad });
    assert.equal(unknown.status, 401);
    const unknownSigned = await post(body, { agent: "nobody" });
    assert.equal(unknownSigned.status, 404);
    assert.ok(!/main|fast|slow|broken/.test(unknownSigned.text), `404 lists agent ids: ${unknownSigned.text}`);
    await settle();
    assert.equal(h.llm.requests.length, 0);
  });

  test("/ask gets a deferred response at once, then exactly one PATCH with the answer", async () => {
    h.llm.state.defaultDelayMs = 1500; // a slow model must not delay the deferred response
    const i = ask("hello from discord");
    const r = await post(i);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { type: 5 });
    assert.ok(r.ms < 1000, `deferred response took ${r.ms} ms`);
    assert.equal(discord.requests.length, 0, "nothing sent before the model answered");
    await h.until(() => discord.calls("original").length === 1, { what: "PATCH @original" });
    await settle();
    assert.equal(discord.requests.length, 1, "exactly one request to Discord");
    const patch = discord.calls("original")[0];
    assert.equal(patch.path, `/webhooks/${discord.appId}/${i.token}/messages/@original`);
    assert.equal(patch.body.content, "echo: hello from discord");
    assert.deepEqual(patch.body.allowed_mentions, { parse: [] });
    assert.equal(h.llm.requests.length, 1);
    const system = systemText(h.llm.requests[0]);
    assert.match(system, /session=agent:main:main\b/);
    assert.match(system, /channel=discord/);
    assert.match(system, /PRIVATE-MEMORY-FACT/, "the owner's DM is the main session");
  });

  test("a long answer arrives as a PATCH and follow-ups, in order, on paragraph boundaries", async () => {
    const paras = Array.from({ length: 6 }, (_, n) => `Paragraph ${n}: ` + "lorem ipsum ".repeat(60).trim());
    const long = paras.join("\n\n"); // ~4.4k chars
    h.llm.push({ text: long });
    const i = ask("tell me a lot");
    assert.deepEqual((await post(i)).json, { type: 5 });
    await h.until(() => discord.calls("followup").length >= 2, { what: "follow-ups" });
    await settle();
    const sent = discord.requests;
    assert.equal(sent[0].route, "original");
    assert.ok(sent.slice(1).every((r) => r.route === "followup" && tokenOf(r) === i.token));
    const contents = sent.map((r) => r.body.content);
    assert.ok(contents.every((c) => c.length <= 2000), contents.map((c) => c.length).join(","));
    assert.equal(contents.length, 3);
    for (const c of contents) assert.match(c, /^Paragraph \d+: lorem/, "each chunk starts at a paragraph");
    assert.equal(contents.join("\n\n"), long);
  });

  test("a 429 on the PATCH is retried after retry_after", async () => {
    discord.rateLimit("original", 0.6);
    await post(ask("rate limited"));
    await h.until(() => discord.calls("original").length === 2, { what: "PATCH retried" });
    const [first, second] = discord.calls("original");
    assert.ok(second.at - first.at >= 590, `retried after ${second.at - first.at} ms`);
    assert.equal(second.body.content, "echo: rate limited");
    await settle();
    assert.equal(discord.requests.length, 2);
  });

  test("a PATCH Discord rejects is reported to the user as a follow-up", async () => {
    discord.fail("original", 400, { message: "Invalid Form Body", code: 50035 });
    const i = ask("will fail");
    await post(i);
    await h.until(() => discord.calls("followup").length === 1, { what: "error follow-up" });
    const note = discord.calls("followup")[0];
    assert.equal(tokenOf(note), i.token);
    assert.match(note.body.content, /could not deliver/);
    assert.match(note.body.content, /Invalid Form Body/);
  });

  test("a model error reaches the user by editing the deferred message", async () => {
    // Refused, and refused again after the one repair a 400 gets.
    h.llm.push({ status: 400 }, { status: 400 });
    await post(ask("break please"));
    await h.until(() => discord.calls("original").length === 1, { what: "error PATCH" });
    assert.match(discord.calls("original")[0].body.content, /⚠️ My model's provider refused our conversation[\s\S]*\/reset/);
  });

  test("a stranger gets an ephemeral note with their id and no LLM call", async () => {
    const r = await post(ask("let me in", { user: STRANGER }));
    assert.equal(r.status, 200);
    assert.equal(r.json.type, 4);
    assert.equal(r.json.data.flags, 64);
    assert.match(r.json.data.content, new RegExp(`discord:${STRANGER}`));
    const s = await post(command("status", { user: STRANGER }));
    assert.equal(s.json.type, 4);
    assert.match(s.json.data.content, /not|only/);
    const g = await post(ask("hi", { user: STRANGER, guild: GUILD, channel: OTHER_CHANNEL }));
    assert.equal(g.json.data.flags, 64);
    assert.match(g.json.data.content, new RegExp(`discord:${OTHER_CHANNEL}`));
    await settle();
    assert.equal(h.llm.requests.length, 0);
    assert.equal(discord.requests.length, 0);
  });

  test("DMs and guild channels get their own sessions; guild channels do not see private files", async () => {
    await post(ask("friend dm", { user: FRIEND }));
    await h.until(() => h.llm.requests.length === 1, { what: "friend turn" });
    assert.match(systemText(h.llm.requests[0]), new RegExp(`session=agent:main:discord:dm:${FRIEND}\\b`));
    await post(ask("guild hello", { user: STRANGER, guild: GUILD }));
    await h.until(() => h.llm.requests.length === 2, { what: "guild turn" });
    const guildReq = h.llm.requests[1];
    assert.match(systemText(guildReq), new RegExp(`session=agent:main:discord:group:${CHANNEL}\\b`));
    assert.ok(!guildReq.raw.includes("PRIVATE-MEMORY-FACT"), "private memory leaked into a guild channel");
    assert.ok(guildReq.raw.includes("[user09]: guild hello"), "group messages carry the sender's name");
    await h.until(() => discord.calls("original").length === 2, { what: "two PATCHes" });
  });

  test("/status answers directly from the session, without an LLM call", async () => {
    await post(ask("something to count"));
    await h.until(() => discord.calls("original").length === 1, { what: "turn" });
    const calls = h.llm.requests.length;
    const r = await post(command("status"));
    assert.equal(r.json.type, 4);
    assert.equal(r.json.data.flags, 64);
    const text = r.json.data.content;
    assert.match(text, /agent:main:main/);
    const n = Number(text.match(/Messages: (\d+)/)?.[1]);
    assert.ok(n >= 2, text);
    assert.match(text, /\d+ in, \d+ out/);
    const fresh = await post(command("status", { user: FRIEND, guild: GUILD, channel: CHANNEL, id: snowflake() }));
    assert.match(fresh.json.data.content, new RegExp(`agent:main:discord:group:${CHANNEL}`));
    await settle();
    assert.equal(h.llm.requests.length, calls, "no LLM call for /status");
    assert.equal(discord.calls("original").length, 1);
  });

  test("/usage shows the owner what the agent cost, the same figures as the API, without an LLM call", async () => {
    await post(ask("something that costs"));
    await h.until(() => discord.calls("original").length === 1, { what: "turn" });
    const calls = h.llm.requests.length;
    // The turn's call is in the ledger once its session settled it.
    const auth = { headers: { authorization: "Bearer discord-admin" } };
    const read = async () => (await h.fetch("/api/agents/main/usage?period=today", auth)).json();
    // Until earlier turns' settlements have all landed: two reads alike.
    let api = await read();
    await h.until(async () => {
      await settle(200);
      const again = await read();
      const same = again.calls >= 1 && again.totalTokens === api.totalTokens;
      api = again;
      return same;
    }, { what: "the ledger settled" });
    const r = await post(command("usage"));
    assert.equal(r.json.type, 4);
    assert.equal(r.json.data.flags, 64, "only the owner sees it");
    const text = r.json.data.content;
    assert.match(text, /^📊 Usage/);
    const total = api.totalTokens.toLocaleString("en-US");
    assert.ok(text.includes(`Today: $0.0000 (+ unpriced: claude-test) · ${total} tokens`), `${text}\n${JSON.stringify(api)}`);
    assert.match(text, new RegExp(`${api.calls} calls · cache hit rate`));
    const other = await post(command("usage", { user: FRIEND }));
    assert.equal(other.json.data.content, "Only my owner can see what I cost.");
    await settle();
    assert.equal(h.llm.requests.length, calls, "no LLM call for /usage");
  });

  test("/memory searches the conversation's own memory store, without an LLM call", async () => {
    h.llm.push({ toolCall: { name: "memory_add", input: { name: "bike-lock", content: "The bike lock code is 4711" } } }, { text: "noted" });
    await post(ask("remember my bike lock code 4711"));
    await h.until(() => discord.calls("original").length === 1, { what: "turn" });
    const calls = h.llm.requests.length;
    const mine = await post(command("memory", { options: [{ name: "query", type: 3, value: "bike lock" }] }));
    assert.equal(mine.json.type, 4);
    assert.equal(mine.json.data.flags, 64, "only the asker sees memory results");
    assert.match(mine.json.data.content, /bike-lock.*4711/);
    const group = await post(command("memory", { user: FRIEND, guild: GUILD, channel: CHANNEL, id: snowflake(), options: [{ name: "query", type: 3, value: "bike lock" }] }));
    assert.match(group.json.data.content, /Nothing in my memory matches/);
    assert.ok(!group.text.includes("4711"), "a private note reached a guild channel");
    await settle();
    assert.equal(h.llm.requests.length, calls, "no LLM call for /memory");
  });

  test("/reset is deferred, archives the session through the lifecycle path and starts fresh", async () => {
    await post(ask("remember this", { user: FRIEND }));
    await h.until(() => discord.calls("original").length === 1, { what: "friend answer" });
    const r = await post(command("reset", { user: FRIEND }));
    assert.deepEqual(r.json, { type: 5 });
    await h.until(() => discord.calls("original").length === 2, { what: "reset answer" });
    assert.match(discord.calls("original")[1].body.content, /Fresh start\. I archived our conversation \(\d+ messages\)/);
    const bucket = await h.bucket();
    const keys = (await bucket.list({ prefix: "agents/main/sessions/" })).objects.map((o) => o.key);
    const metas = await Promise.all(keys.map(async (k) => (await bucket.head(k)).customMetadata));
    assert.ok(metas.some((m) => m.sessionKey === `agent:main:discord:dm:${FRIEND}`), "archive of the friend's DM session");
    const s = await post(command("status", { user: FRIEND }));
    assert.match(s.json.data.content, /no conversation yet/);
  });

  test("/undo reverts the agent's last workspace change for the owner, and only for the owner", async () => {
    h.llm.push({ toolCall: { name: "write_file", input: { path: "notes/trip.md", content: "Lisbon in May\n" } } }, { text: "written" });
    const before = discord.calls("original").length;
    await post(ask("note my trip"));
    await h.until(() => discord.calls("original").length === before + 1, { what: "ask answer" });
    assert.equal(await (await (await h.bucket()).get("agents/main/notes/trip.md")).text(), "Lisbon in May\n");
    const calls = h.llm.requests.length;
    const r = await post(command("undo"));
    assert.deepEqual(r.json, { type: 5 });
    await h.until(() => discord.calls("original").length === before + 2, { what: "undo answer" });
    assert.match(discord.calls("original").at(-1).body.content, /Undone: deleted notes\/trip\.md again: I had created it \(write_file/);
    assert.equal(await (await h.bucket()).get("agents/main/notes/trip.md"), null);
    assert.equal(h.llm.requests.length, calls, "no LLM call for /undo");
    // In someone else's DM there is nothing of the owner's to undo.
    await post(command("undo", { user: FRIEND }));
    await h.until(() => discord.calls("original").length === before + 3, { what: "friend's undo answer" });
    assert.match(discord.calls("original").at(-1).body.content, /Only my owner can undo/);
  });

  test("an /ask attachment is downloaded from the CDN and reaches the model as an image", async () => {
    const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), crypto.randomBytes(3000)]);
    const att = discord.serveAttachment("555", "cat.png", png, "image/png");
    const i = command("ask", {
      options: [{ name: "prompt", type: 3, value: "look" }, { name: "attachment", type: 11, value: "555" }],
      resolved: { attachments: { 555: att } },
    });
    assert.deepEqual((await post(i)).json, { type: 5 });
    await h.until(() => discord.calls("original").length === 1, { what: "answer" });
    assert.equal(discord.calls("original")[0].body.content, "echo: look");
    assert.equal(discord.calls("attachment").length, 1);
    const user = h.llm.requests.at(-1).body.messages.at(-1);
    const image = user.content.find((b) => b.type === "image");
    assert.ok(image, "an image block");
    assert.equal(image.source.media_type, "image/png");
    assert.ok(Buffer.from(image.source.data, "base64").equals(png), "the model sees the exact bytes");
    const media = (await (await h.bucket()).list({ prefix: "media/agent:main:main/" })).objects;
    assert.ok(media.some((o) => o.key.endsWith(".png")), "stored in R2");
  });

  test("buttons, select menus and forms get a polite ephemeral note; autocomplete gets an empty list", async () => {
    for (const file of [
      "interaction-message-component-button.json",
      "interaction-message-component-string-select.json",
      "interaction-message-component-minimal.json",
      "interaction-modal-submit.json",
    ]) {
      const r = await post(fixture(file));
      assert.equal(r.status, 200, `${file}: ${r.text}`);
      assert.equal(r.json.type, 4, file);
      assert.equal(r.json.data.flags, 64, `${file}: only the user sees it`);
      assert.match(r.json.data.content, /not something I handle\. Use \/ask/, file);
    }
    const auto = await post(fixture("interaction-autocomplete.json"));
    assert.equal(auto.status, 200, auto.text);
    assert.deepEqual(auto.json, { type: 8, data: { choices: [] } });
    // Signatures are still checked first.
    const unsigned = await post(fixture("interaction-modal-submit.json"), { sign: false });
    assert.equal(unsigned.status, 401);
    await settle();
    assert.equal(h.llm.requests.length, 0);
    assert.equal(discord.requests.length, 0);
  });

  test("a message command (Apps → Ask Hearth) asks about that message: its text reaches the model", async () => {
    // Discord's documented example, run by the owner in an allowed channel.
    const i = fixture("interaction-message-command.json");
    Object.assign(i, { id: snowflake(), token: `tok-${snowflake()}`, application_id: discord.appId, guild_id: GUILD, channel_id: CHANNEL });
    i.member.user.id = OWNER;
    assert.deepEqual((await post(i)).json, { type: 5 });
    await h.until(() => discord.calls("original").length === 1, { what: "answer" });
    const user = h.llm.requests.at(-1).body.messages.at(-1);
    const text = user.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    assert.ok(text.endsWith('[Asking about a message from ian: "some message"]\n[ian]'), text);
    assert.match(discord.calls("original")[0].body.content, /some message/);
  });

  test("a thread under an allowed channel is its own conversation in that channel's scope", async () => {
    const i = ask("hello from a thread", { user: STRANGER, guild: GUILD, thread: THREAD });
    assert.deepEqual((await post(i)).json, { type: 5 });
    await h.until(() => discord.calls("original").length === 1, { what: "thread answer" });
    assert.equal(discord.calls("original")[0].body.content, "echo: [user09]: hello from a thread");
    const req = h.llm.requests[0];
    assert.match(systemText(req), new RegExp(`session=agent:main:discord:group:${CHANNEL}:topic:${THREAD}\\b`));
    assert.ok(!req.raw.includes("PRIVATE-MEMORY-FACT"), "private memory leaked into a thread");
    // A thread under a channel that is not allowed is refused, naming the channel to allow.
    const other = await post(ask("hi", { user: STRANGER, guild: GUILD, channel: OTHER_CHANNEL, thread: "300000000000000012" }));
    assert.equal(other.json.type, 4);
    assert.match(other.json.data.content, new RegExp(`discord:${OTHER_CHANNEL}`));
    await settle();
    assert.equal(h.llm.requests.length, 1);
  });

  test("a /ask that waited in the queue past its deadline spends no LLM call and says so", async () => {
    // Agent `fast`: a model call may start at most 1 s after the interaction.
    h.llm.push({ delayMs: 1500 });
    const first = ask("slow one");
    const second = ask("queued one");
    assert.deepEqual((await post(first, { agent: "fast" })).json, { type: 5 });
    assert.deepEqual((await post(second, { agent: "fast" })).json, { type: 5 });
    await h.until(() => discord.calls("original").length === 2, { what: "two PATCHes" });
    await settle();
    assert.equal(h.llm.requests.length, 1, "the queued /ask made no LLM call");
    const byToken = Object.fromEntries(discord.calls("original").map((r) => [tokenOf(r), r.body.content]));
    assert.equal(byToken[first.token], "echo: slow one", "a call started in time is delivered");
    assert.match(byToken[second.token], /waited in my queue longer than I can still answer it here/);
    assert.match(byToken[second.token], /ask again/);
  });

  test("a turn about to outlive its deadline tells the user in time instead of calling the model again", async () => {
    h.llm.push({ toolCall: { name: "read_file", input: { path: "SOUL.md" } }, delayMs: 1500 }, { text: "too late" });
    const i = ask("do a long job");
    assert.deepEqual((await post(i, { agent: "fast" })).json, { type: 5 });
    await h.until(() => discord.calls("original").length === 1, { what: "note" });
    await settle();
    assert.equal(h.llm.requests.length, 1, "no model call after the deadline");
    assert.equal(tokenOf(discord.calls("original")[0]), i.token, "through the interaction token, still valid");
    assert.match(discord.calls("original")[0].body.content, /taking longer than I can still answer here/);
  });

  test("a /ask older than its deadline gets no turn; the note goes to the channel with the bot token", async () => {
    const i = ask("ancient", { id: snowflake(16 * 60 * 1000) });
    assert.deepEqual((await post(i)).json, { type: 5 });
    await h.until(() => discord.calls("channel").length === 1, { what: "channel post" });
    await settle();
    assert.equal(h.llm.requests.length, 0);
    assert.match(discord.calls("channel")[0].body.content, /waited in my queue/);
    assert.equal(discord.calls("original").length + discord.calls("followup").length, 0, "no call with a dead token");
  });

  test("a reply after the 15-minute token lifetime goes to the channel with the bot token", async () => {
    // Agent `slow` lets a turn start late, so the answer outlives the token.
    const i = ask("late one", { id: snowflake(16 * 60 * 1000) });
    assert.deepEqual((await post(i, { agent: "slow" })).json, { type: 5 });
    await h.until(() => discord.calls("channel").length === 1, { what: "channel post" });
    const msg = discord.calls("channel")[0];
    assert.equal(msg.path, `/channels/${dmChannel(OWNER)}/messages`);
    assert.equal(msg.headers.authorization, `Bot ${discord.botToken}`);
    assert.match(msg.body.content, /echo: late one/);
    await settle();
    assert.equal(discord.calls("original").length + discord.calls("followup").length, 0, "no call with a dead token");
  });
});

describe("discord reply delivery", () => {
  test("an answer Discord will not take before the interaction token dies is reported to the owner, never sent with the dead token", async () => {
    // Hearth treats a token as dead 30 s before Discord's 15 minutes: this one has about 5 s left.
    const age = 15 * 60 * 1000 - 30 * 1000 - 5000;
    const created = Date.now() - age;
    discord.outage("original", 500);
    const i = ask("are you there?", { id: snowflake(age) });
    assert.deepEqual((await post(i, { agent: "nobot" })).json, { type: 5 });
    const report = await h.until(() => h.telegram.delivered().find((r) => /was not delivered/.test(r.body.text)), {
      what: "the report to the owner (on Telegram, the first of OWNER_IDS)",
      timeoutMs: 15000,
    });
    assert.match(report.body.text, /Discord chat/);
    assert.match(report.body.text, /interaction token expired[\s\S]*DISCORD_BOT_TOKEN is not set/);
    assert.match(report.body.text, /echo: are you there\?/);
    const patches = discord.calls("original");
    assert.ok(patches.length >= 2, "the edit was retried while the token lived");
    assert.ok(patches.every((r) => r.at < created + 14.5 * 60 * 1000 + 1000), "nothing sent with the dead token");
    assert.equal(discord.calls("followup").length + discord.calls("channel").length, 0);
    // Once the report's delivery is recorded, nothing waits any more.
    const status = await h.until(async () => {
      const s = await h.sessionStatus("agent:nobot:main");
      return s.outbox.waiting.length === 0 && s;
    }, { what: "an empty outbox" });
    assert.equal(status.outbox.undelivered[0].outcome, "unreachable");
  });
});

describe("npm run discord:register", () => {
  // Asynchronous: the stand-in answers from this same process.
  const run = (args, env, cwd) =>
    new Promise((resolve) => {
      execFile(process.execPath, [path.join(ROOT, "scripts/discord-register.mjs"), ...args], { cwd, env: { PATH: process.env.PATH, ...env }, encoding: "utf8" }, (err, stdout, stderr) =>
        resolve({ status: err ? err.code : 0, stdout, stderr }),
      );
    });
  const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "hearth-reg-"));

  test("puts the commands for one guild, or globally, with the bot token", async () => {
    const env = { DISCORD_API_BASE: discord.base, DISCORD_APPLICATION_ID: discord.appId, DISCORD_BOT_TOKEN: discord.botToken };
    const g = await run(["--guild", "987"], env, tmp());
    assert.equal(g.status, 0, g.stderr);
    assert.match(g.stdout, /Registered 7 commands guild 987/);
    assert.match(g.stdout, /\/ask/);
    const put = discord.calls("commands")[0];
    assert.equal(put.method, "PUT");
    assert.equal(put.path, `/applications/${discord.appId}/guilds/987/commands`);
    assert.equal(put.headers.authorization, `Bot ${discord.botToken}`);
    assert.deepEqual(put.body.map((c) => [c.name, c.type]), [["ask", 1], ["reset", 1], ["status", 1], ["undo", 1], ["usage", 1], ["memory", 1], ["Ask Hearth", 3]]);
    assert.ok(!("description" in put.body[6]), "Discord refuses a description on a message command");
    const askDef = put.body[0];
    assert.deepEqual(askDef.options.map((o) => [o.name, o.type, o.required]), [["prompt", 3, true], ["attachment", 11, false]]);

    const dir = tmp();
    fs.writeFileSync(path.join(dir, ".dev.vars"), `# test\nDISCORD_APPLICATION_ID=${discord.appId}\nDISCORD_BOT_TOKEN="${discord.botToken}"\nDISCORD_API_BASE=${discord.base}\n`);
    const global = await run([], {}, dir);
    assert.equal(global.status, 0, global.stderr);
    assert.match(global.stdout, /Registered 7 commands globally/);
    assert.equal(discord.calls("commands")[1].path, `/applications/${discord.appId}/commands`);
  });

  test("says what is missing or what Discord refused", async () => {
    const missing = await run([], { DISCORD_API_BASE: discord.base }, tmp());
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /DISCORD_APPLICATION_ID and DISCORD_BOT_TOKEN not set/);
    const wrong = await run([], { DISCORD_API_BASE: discord.base, DISCORD_APPLICATION_ID: discord.appId, DISCORD_BOT_TOKEN: "wrong" }, tmp());
    assert.equal(wrong.status, 1);
    assert.match(wrong.stderr, /401/);
  });
});
