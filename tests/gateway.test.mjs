// End to end: the Discord Gateway object in workerd, connected to a local
// Gateway stand-in (tests/support/discord-gateway.mjs) that speaks Discord's
// opcodes, and replying over REST to the Discord API stand-in.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth } from "./support/hearth.mjs";
import { startDiscord } from "./support/discord.mjs";
import { INTENTS, messageCreate, startGateway } from "./support/discord-gateway.mjs";

const OWNER = "100000000000000001";
const PERSON = "100000000000000005";
const STRANGER = "100000000000000009";
const GUILD = "200000000000000001";
const CHANNEL = "300000000000000001"; // allowed
const OTHER_CHANNEL = "300000000000000002"; // not allowed
const DM = "400000000000000001";
const BOT = "1016612301262041098";
const ADMIN = "gateway-admin";

let h;
let discord;
let gw;
let noIntent;
before(async () => {
  discord = await startDiscord();
  gw = await startGateway({ token: discord.botToken, botId: BOT, heartbeatMs: 400 });
  noIntent = await startGateway({ token: "intentless-token", messageContentEnabled: false, heartbeatMs: 400 });
  h = await startHearth({
    bindings: ({ llm }) => ({
      TTS_BASE_URL: `${llm.base}/v1`,
      AGENTS: "main,badtoken,nointent,off",
      ADMIN_TOKEN: ADMIN,
      DISCORD_GATEWAY: "on",
      DISCORD_GATEWAY__OFF: "off",
      DISCORD_GATEWAY_URL: gw.url,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_BOT_TOKEN__BADTOKEN: "wrong-token",
      DISCORD_GATEWAY_URL__NOINTENT: noIntent.url,
      DISCORD_BOT_TOKEN__NOINTENT: "intentless-token",
      DISCORD_API_BASE: discord.base,
      OWNER_IDS: `discord:${OWNER}`,
      ALLOW_FROM: `discord:${CHANNEL},discord:${PERSON}`,
      STRANGER_COOLDOWN_MINUTES: "0",
      USAGE_SETTLE_MS: "0",
    }),
  });
  await h.putFile("agents/main/SOUL.md", "# Soul\nI am Ember.");
  await h.putFile("agents/main/MEMORY.md", "- PRIVATE-MEMORY-FACT");
});
after(async () => {
  await h.close();
  await gw.close();
  await noIntent.close();
  await discord.close();
});
beforeEach(() => {
  h.llm.reset();
  discord.reset();
});

const admin = (path, init = {}) =>
  h.fetch(path, { ...init, headers: { authorization: `Bearer ${ADMIN}`, ...(init.headers ?? {}) } });
const status = async (agent = "main") => (await admin(`/api/agents/${agent}/gateway`)).json();
const lastUserText = (req) => {
  const msgs = req.body.messages;
  const last = msgs[msgs.length - 1];
  return typeof last.content === "string" ? last.content : last.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
};

async function connected() {
  await h.until(async () => (await status()).phase === "ready", { what: "gateway ready" });
}

describe("Discord Gateway", () => {
  test("starts from the admin API: IDENTIFY with guild messages, DMs and message content, heartbeats at HELLO's interval", async () => {
    const s0 = await status();
    assert.equal(s0.enabled, true);
    await connected();
    const identify = gw.sent(2)[0];
    assert.equal(identify.d.token, discord.botToken);
    assert.equal(identify.d.intents, INTENTS.GUILD_MESSAGES | INTENTS.DIRECT_MESSAGES | INTENTS.MESSAGE_CONTENT);
    const s = await status();
    assert.equal(s.botUserId, BOT);
    assert.equal(s.resumable, true);
    assert.equal(s.heartbeatIntervalMs, 400);
    // Heartbeats keep coming, each with the last sequence number, and are acknowledged.
    const before = gw.sent(1).length;
    await h.until(() => gw.sent(1).length >= before + 3, { what: "three heartbeats" });
    assert.ok(gw.sent(1).every((f) => f.d === null || typeof f.d === "number"));
    assert.equal(gw.sent(1).at(-1).d, gw.state.sessions.get(gw.live().session).seq);
    assert.equal(gw.state.connections.length, 1, "one connection per bot");
  });

  test("a mention in an allowed channel is answered as a reply over REST, with typing; a channel not let in gets a pairing code", async () => {
    await connected();
    h.llm.push({ text: "Step 3 needs the staging key." });
    const quiet = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat" }, content: "just chatting" });
    const elsewhere = messageCreate({ channel: OTHER_CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat" }, content: `<@${BOT}> hello`, mentions: [{ id: BOT, username: "Hearth", bot: true }] });
    const fromBot = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: "999", username: "otherbot", bot: true }, content: `<@${BOT}> ping`, mentions: [{ id: BOT, username: "Hearth", bot: true }] });
    const ask = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat", name: "Pat" }, content: `<@${BOT}> why did the deploy fail?`, mentions: [{ id: BOT, username: "Hearth", bot: true }] });
    for (const m of [quiet, elsewhere, fromBot, ask]) gw.dispatch("MESSAGE_CREATE", m);
    const posted = (channel) => discord.calls("channel").find((c) => c.params.channel === channel);
    await h.until(() => posted(CHANNEL) && posted(OTHER_CHANNEL), { what: "the reply and the code" });
    const post = posted(CHANNEL);
    assert.equal(discord.calls("channel").length, 2, "the quiet message and the bot's are not answered");
    // The channel nobody let in is told how its people can ask the owner (no LLM call).
    assert.match(posted(OTHER_CHANNEL).body.content, /only answer in groups my owner allows.*\/approve [A-Z2-9]{8}/);
    assert.equal(post.body.content, "Step 3 needs the staging key.");
    assert.equal(post.body.message_reference.message_id, ask.id, "a reply to the message");
    assert.equal(post.headers.authorization, `Bot ${discord.botToken}`);
    assert.ok(discord.calls("typing").some((c) => c.params.channel === CHANNEL), "typing shown");
    assert.equal(h.llm.requests.length, 1, "only the addressed message cost a call");
    const text = lastUserText(h.llm.requests[0]);
    assert.match(text, /\[Pat\]: why did the deploy fail\?/);
    assert.ok(!text.includes(BOT), "the mention is not part of the question");
    assert.ok(!JSON.stringify(h.llm.requests[0].body).includes("PRIVATE-MEMORY-FACT"), "no private files in a channel");
  });

  test("a reply to the bot's message addresses it; long answers go in pieces of 2,000, the first as the reply", async () => {
    await connected();
    const long = "word ".repeat(900).trim();
    h.llm.push({ text: long });
    const mine = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: BOT, username: "Hearth", bot: true }, content: "Earlier answer" });
    const reply = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat" }, content: "and then?", replyTo: mine });
    gw.dispatch("MESSAGE_CREATE", reply);
    await h.until(() => discord.calls("channel").length >= 3, { what: "three pieces" });
    const posts = discord.calls("channel");
    assert.ok(posts.every((p) => p.body.content.length <= 2000));
    assert.equal(posts.map((p) => p.body.content).join(" ").replace(/\s+/g, " "), long);
    assert.equal(posts[0].body.message_reference.message_id, reply.id);
    assert.ok(!posts[1].body.message_reference, "only the first piece replies");
    assert.match(lastUserText(h.llm.requests[0]), /\[Replying to your message: "Earlier answer"\]/);
  });

  test("the owner's DMs reach the main session; a stranger is told their id; a repeated event is answered once", async () => {
    await connected();
    h.llm.push({ text: "Hi Olga" });
    const dm = messageCreate({ channel: DM, author: { id: OWNER, username: "olga" }, content: "what do you remember?" });
    gw.dispatch("MESSAGE_CREATE", dm);
    gw.dispatch("MESSAGE_CREATE", dm); // a replay (resumes can deliver an event again)
    await h.until(() => discord.calls("channel").length >= 1, { what: "the DM answer" });
    await h.settle("agent:main:main");
    assert.equal(h.llm.requests.length, 1, "deduped on the message id");
    assert.ok(JSON.stringify(h.llm.requests[0].body).includes("PRIVATE-MEMORY-FACT"), "the owner's main session");
    assert.equal(discord.calls("channel")[0].params.channel, DM);
    const stranger = messageCreate({ channel: "400000000000000009", author: { id: STRANGER, username: "x" }, content: "hi" });
    gw.dispatch("MESSAGE_CREATE", stranger);
    await h.until(() => discord.calls("channel").length >= 2, { what: "the stranger notice" });
    assert.match(discord.calls("channel")[1].body.content, new RegExp(`discord:${STRANGER}`));
    assert.equal(h.llm.requests.length, 1, "no LLM call for a stranger");
  });

  test("/voice on in a DM: answers come as text and then an Ogg attachment replying to the message", async () => {
    await connected();
    gw.dispatch("MESSAGE_CREATE", messageCreate({ channel: DM, author: { id: OWNER, username: "olga" }, content: "/voice on" }));
    await h.until(() => discord.calls("channel").length >= 1, { what: "the /voice answer" });
    assert.match(discord.calls("channel")[0].body.content, /Voice replies on/);
    h.llm.push({ text: "Spoken and written." });
    const ask = messageCreate({ channel: DM, author: { id: OWNER, username: "olga" }, content: "say it" });
    gw.dispatch("MESSAGE_CREATE", ask);
    await h.until(() => discord.calls("channel").length >= 3, { what: "text and voice" });
    const [, text, voice] = discord.calls("channel");
    assert.equal(text.body.content, "Spoken and written.");
    const file = voice.files["files[0]"];
    assert.equal(file.contentType, "audio/ogg");
    assert.ok(file.bytes.subarray(0, 4).equals(Buffer.from("OggS")));
    assert.deepEqual(voice.body.attachments, [{ id: 0, filename: "reply.ogg" }]);
    assert.equal(voice.body.message_reference.message_id, ask.id);
    assert.equal(h.llm.state.speech[0].body.input, "Spoken and written.");
  });

  test("RECONNECT: resumes with the session id and sequence at resume_gateway_url, and missed events are replayed", async () => {
    await connected();
    const session = gw.live().session;
    const seq = gw.state.sessions.get(session).seq;
    const conns = gw.state.connections.length;
    gw.reconnect();
    await h.until(() => gw.sent(6).length >= 1 && gw.state.connections.length > conns, { what: "a RESUME" });
    const resume = gw.sent(6).at(-1);
    assert.equal(resume.d.session_id, session);
    assert.ok(resume.d.seq >= seq);
    assert.match(gw.state.connections.at(-1).path, /^\/resume\/?\?v=10&encoding=json$/);
    await connected();
    assert.equal((await status()).resumes >= 1, true);
    // Still answering after the resume.
    h.llm.push({ text: "still here" });
    gw.dispatch("MESSAGE_CREATE", messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat" }, content: `<@${BOT}> there?`, mentions: [{ id: BOT, username: "Hearth", bot: true }] }));
    await h.until(() => discord.calls("channel").some((c) => c.body.content === "still here"), { what: "answer after resume" });
  });

  test("a RESUME that fails (INVALID_SESSION false) identifies anew", async () => {
    await connected();
    const identifies = gw.sent(2).length;
    gw.state.refuseNextResume = true;
    const resumes = gw.sent(6).length;
    gw.reconnect();
    await h.until(() => gw.sent(6).length > resumes, { what: "a RESUME" });
    await h.until(() => gw.sent(2).length > identifies, { what: "a new IDENTIFY", timeoutMs: 15000 });
    await connected();
    const s = await status();
    assert.equal(gw.live().resumed, undefined, "a new session");
    assert.equal(s.resumable, true);
  });

  test("a dropped heartbeat ACK is a zombie connection: closed and resumed", async () => {
    await connected();
    const conns = gw.state.connections.length;
    gw.state.ackHeartbeats = false;
    try {
      await h.until(() => gw.state.connections.length > conns, { what: "a reconnect", timeoutMs: 10000 });
    } finally {
      gw.state.ackHeartbeats = true;
    }
    const old = gw.state.connections[conns - 1];
    const closed = gw.state.closes.find((c) => c.conn === old.id);
    assert.ok(closed && closed.by === "client" && closed.code !== 1000 && closed.code !== 1001, JSON.stringify(closed));
    await connected();
    assert.ok(gw.state.connections.at(-1).resumed, "resumed, not identified anew");
    assert.match((await status()).lastError ?? "", /ACK/);
  });

  test("an abrupt drop (1006): resumes, and an event sent while disconnected is replayed and answered once", async () => {
    await connected();
    const session = gw.live().session;
    const conns = gw.state.connections.length;
    h.llm.push({ text: "answered after the drop" });
    const missed = messageCreate({ channel: CHANNEL, guild: GUILD, author: { id: PERSON, username: "pat" }, content: `<@${BOT}> did you miss this?`, mentions: [{ id: BOT, username: "Hearth", bot: true }] });
    gw.drop();
    gw.queue("MESSAGE_CREATE", missed); // happens while the bot is away
    await h.until(() => gw.state.connections.length > conns && gw.live()?.resumed, { what: "a resumed connection" });
    assert.equal(gw.sent(6).at(-1).d.session_id, session, "the same session, resumed");
    await h.until(() => discord.calls("channel").length >= 1, { what: "the replayed event's answer" });
    await h.settle(`agent:main:discord:group:${CHANNEL}`);
    // A replay the client already had (a second resume) is not answered again.
    gw.reconnect();
    await h.until(() => gw.state.connections.length > conns + 1 && gw.live()?.resumed, { what: "another resume" });
    gw.dispatch("MESSAGE_CREATE", missed);
    await connected();
    await h.settle(`agent:main:discord:group:${CHANNEL}`);
    const answers = discord.calls("channel").filter((c) => c.body.content === "answered after the drop");
    assert.equal(answers.length, 1, "answered exactly once");
    assert.equal(answers[0].body.message_reference.message_id, missed.id);
    assert.equal(h.llm.requests.length, 1);
    assert.equal((await status()).lastCloseCode, 1006);
  });

  test("a server close 4000 resumes the session; 4009 identifies anew", async () => {
    await connected();
    const session = gw.live().session;
    const resumes = gw.sent(6).length;
    const identifies = gw.sent(2).length;
    gw.closeWith(4000, "Unknown error.");
    await h.until(() => gw.sent(6).length > resumes && gw.live()?.resumed, { what: "a RESUME after 4000" });
    assert.equal(gw.sent(6).at(-1).d.session_id, session);
    assert.equal(gw.sent(2).length, identifies, "no new IDENTIFY");
    await connected();
    gw.closeWith(4009, "Session timed out.");
    await h.until(() => gw.sent(2).length > identifies, { what: "an IDENTIFY after 4009" });
    await connected();
    assert.notEqual(gw.live().session, session, "a new session");
    assert.equal(gw.sent(6).length, resumes + 1, "4009 is not resumed");
    assert.equal((await status()).lastCloseCode, 4009);
  });

  test("4009 right after every READY: each new IDENTIFY waits longer, no tight loop", async () => {
    await connected();
    // A connection proves itself with its first acknowledged heartbeat (the backoff starts over).
    await h.until(async () => (await status()).failures === 0, { what: "a working connection" });
    const first = gw.sent(2).length;
    gw.state.closeAfterReady = 2;
    gw.closeWith(4009, "Session timed out.");
    await h.until(() => gw.sent(2).length >= first + 3, { what: "three IDENTIFYs", timeoutMs: 15000 });
    await connected();
    const at = gw.sent(2).slice(first).map((f) => f.at);
    // The backoff's lower bounds (1 s and 2 s, scaled by a jitter of at least 0.5):
    // a slow machine only makes the gaps longer.
    assert.ok(at[1] - at[0] >= 500, `second IDENTIFY ${at[1] - at[0]} ms after the first`);
    assert.ok(at[2] - at[1] >= 1000, `third IDENTIFY ${at[2] - at[1]} ms after the second`);
  });

  test("a bad token (4004) and a missing privileged intent (4014) stop the bot with a clear error, without a loop", async () => {
    const bad = await h.until(async () => {
      const s = await status("badtoken");
      return s.phase === "failed" && s;
    }, { what: "badtoken failed" });
    assert.equal(bad.lastCloseCode, 4004);
    assert.match(bad.fatal, /DISCORD_BOT_TOKEN/);
    const missing = await h.until(async () => {
      const s = await status("nointent");
      return s.phase === "failed" && s;
    }, { what: "nointent failed" });
    assert.equal(missing.lastCloseCode, 4014);
    assert.match(missing.fatal, /MESSAGE CONTENT/);
    const attempts = noIntent.state.connections.length;
    await new Promise((r) => setTimeout(r, 1500));
    await status("nointent"); // the tick's ensure does not restart it
    assert.equal(noIntent.state.connections.length, attempts, "no reconnect loop");
    // The owner enables the intent in the portal, then asks for a connection.
    noIntent.state.messageContentEnabled = true;
    const res = await admin("/api/agents/nointent/gateway/connect", { method: "POST" });
    assert.equal(res.status, 200);
    await h.until(async () => (await status("nointent")).phase === "ready", { what: "nointent ready" });
    const off = await status("off");
    assert.equal(off.enabled, false);
    assert.equal(off.phase, "idle");
    assert.equal((await admin("/api/agents/off/gateway/connect", { method: "POST" })).status, 409);
  });
});
