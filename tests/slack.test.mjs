// End to end: Slack's Events API → Session object → LLM → chat.postMessage,
// in workerd, against a Slack Web API stand-in that answers as Slack does.
// Requests are signed as Slack signs them (v0, HMAC-SHA256), checked in the
// Worker with the runtime's WebCrypto.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";
import { jpegBytes } from "./support/media.mjs";
import { signedHeaders, slackSignature, startSlack } from "./support/slack.mjs";
import { percentile } from "./support/stats.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fixture = (name) => JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/real-world/slack", name), "utf8"));

const SECRET = "slack-signing-secret-for-tests";
const SLACK_OWNER = "U2147483697";
const FRIEND = "U0FRIEND01";
const STRANGER = "U0STRANGER";
const CHANNEL = "C123ABC456"; // allowed
const OTHER_CHANNEL = "C999999999"; // not allowed
const BOT = "U0LAN0Z89";

let h;
let slack;
before(async () => {
  slack = await startSlack({ botUser: BOT });
  h = await startHearth({
    bindings: {
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_BOT_TOKEN: slack.token,
      SLACK_API_BASE: slack.base,
      OWNER_IDS: `telegram:${OWNER},slack:${SLACK_OWNER}`,
      ALLOW_FROM: `slack:${FRIEND},slack:${CHANNEL}`,
      STREAM_REPLIES_INTERVAL_MS: "100",
      DELIVERY_MAX_WAIT_MS: "300",
    },
  });
  await h.putFile("agents/main/MEMORY.md", "- PRIVATE-MEMORY-FACT");
});
after(async () => {
  await h.close();
  await slack.close();
});
beforeEach(() => {
  h.reset();
  slack.reset();
});

let seq = 0;
/** An event as Slack wraps it, from a real payload's envelope. */
function envelope(event) {
  const base = fixture("app-mention-docs.json");
  return {
    ...base,
    event_id: `Ev${Date.now()}${++seq}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: "T123ABC456", user_id: BOT, is_bot: true, is_enterprise_install: false }],
    event,
  };
}
const ts = () => `${Math.floor(Date.now() / 1000)}.${String(++seq).padStart(6, "0")}`;
function dm(text, { user = SLACK_OWNER, channel = "D024BE91L", files } = {}) {
  const t = ts();
  return envelope({ type: "message", channel, user, text, ts: t, event_ts: t, channel_type: "im", ...(files ? { subtype: "file_share", files } : {}) });
}
function mention(text, { user = FRIEND, channel = CHANNEL, thread } = {}) {
  const t = ts();
  return envelope({ type: "app_mention", user, text: `<@${BOT}> ${text}`, ts: t, channel, event_ts: t, ...(thread ? { thread_ts: thread } : {}) });
}
async function post(body, { secret = SECRET, ts: at, retry, raw } = {}) {
  const text = raw ?? JSON.stringify(body);
  return h.fetch("/slack/main", { method: "POST", headers: signedHeaders(secret, text, { ts: at, retry }), body: text });
}
const lastUserText = (req) => {
  const m = req.body.messages.filter((x) => x.role === "user").at(-1);
  return typeof m.content === "string" ? m.content : m.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
};

describe("slack", () => {
  test("the Request URL check is answered with its challenge", async () => {
    const res = await post(fixture("url-verification-docs.json"));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
  });

  test("bad signatures, stale timestamps and unsigned requests are all refused, and cost nothing", async () => {
    const body = JSON.stringify(dm("hello"));
    const now = Math.floor(Date.now() / 1000);
    const attempts = [];
    for (let i = 0; i < 20; i++) {
      const forged = { ...signedHeaders(SECRET, body), "x-slack-signature": slackSignature("wrong-secret", now, body) };
      attempts.push(h.fetch("/slack/main", { method: "POST", headers: forged, body }));
      // Signed correctly, but six minutes ago (a captured request replayed).
      attempts.push(h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SECRET, body, { ts: now - 360 }), body }));
      // Signed for another body.
      attempts.push(h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SECRET, body + " "), body }));
      attempts.push(h.fetch("/slack/main", { method: "POST", headers: { "content-type": "application/json" }, body }));
    }
    const statuses = (await Promise.all(attempts)).map((r) => r.status);
    assert.deepEqual([...new Set(statuses)], [401], "every one refused");
    assert.equal(h.llm.requests.length, 0);
    assert.equal(slack.calls("chat.postMessage").length, 0);
  });

  test("the owner's DM is the main session: what was said on Telegram is known on Slack", async () => {
    h.llm.push({ text: "Noted: your cat is Miso." });
    await h.sendUpdate(tgUpdate({ text: "my cat is called Miso" }));
    await h.telegram.untilSent(1);
    h.llm.push({ text: "Your cat is **Miso**, see [cats](https://example.com/cats)." });
    const res = await post(dm("what is my cat called?"));
    assert.equal(res.status, 200);
    await h.until(() => slack.posted().length === 1, { what: "the Slack answer" });
    const [answer] = slack.posted();
    assert.equal(answer.body.channel, "D024BE91L");
    assert.equal(answer.body.text, "Your cat is *Miso*, see <https://example.com/cats|cats>.", "mrkdwn");
    assert.equal(answer.body.thread_ts, undefined, "a DM's answer follows the message");
    assert.equal(answer.headers.authorization, `Bearer ${slack.token}`);
    const req = h.llm.requests[1];
    assert.match(JSON.stringify(req.body.messages), /my cat is called Miso/, "one history across channels");
    assert.match(systemText(req), /PRIVATE-MEMORY-FACT/, "the owner's main session sees MEMORY.md");
    await h.settle("agent:main:main");
  });

  test("an event delivered again and again (Slack's retries) is answered once", async () => {
    const event = dm("only once please", { user: FRIEND, channel: "D0FRIEND01" });
    const first = await post(event);
    assert.equal(await first.text(), "queued");
    const again = await Promise.all([1, 2, 3].map((retry) => post(event, { retry })));
    assert.deepEqual(await Promise.all(again.map((r) => r.text())), ["duplicate", "duplicate", "duplicate"]);
    await h.until(() => slack.posted().length === 1, { what: "the answer" });
    await h.settle(`agent:main:slack:dm:${FRIEND}`);
    assert.equal(h.llm.requests.length, 1, "one turn");
    assert.equal(slack.posted().length, 1, "one reply");
  });

  test("a mention in an allowed channel is answered in its thread, without the owner's private files", async () => {
    h.llm.push({ text: "In the thread." });
    const m = mention("what do you think?");
    await post(m);
    await h.until(() => slack.posted().length >= 1, { what: "the answer" });
    const answer = slack.posted().at(-1);
    assert.equal(answer.body.channel, CHANNEL);
    assert.equal(answer.body.thread_ts, m.event.ts, "a new thread under the mention");
    assert.equal(lastUserText(h.llm.requests[0]).trim().endsWith("what do you think?"), true);
    assert.doesNotMatch(systemText(h.llm.requests[0]), /PRIVATE-MEMORY-FACT/, "a channel is not the owner's main session");
    // A follow-up in that thread is the same conversation.
    h.llm.push({ text: "Still here." });
    await post(mention("and now?", { thread: m.event.ts }));
    await h.until(() => slack.posted().length >= 2, { what: "the second answer" });
    assert.equal(slack.posted().at(-1).body.thread_ts, m.event.ts);
    assert.match(JSON.stringify(h.llm.requests.at(-1).body.messages), /what do you think\?/);
    // Not in ALLOW_FROM: nothing.
    await post(mention("hello?", { channel: OTHER_CHANNEL }));
    await h.settle(`agent:main:slack:group:${CHANNEL}:topic:${m.event.ts}`);
    assert.equal(h.llm.requests.length, 2);
  });

  test("a channel message reaches the model under the person's Slack name, asked of Slack once", async () => {
    const ANA = "U0ANA00001";
    slack.addUser(ANA, { displayName: "ana.lima", realName: "Ana Lima" });
    h.llm.push({ text: "Hello Ana." });
    const m = mention("who am I?", { user: ANA });
    await post(m);
    await h.until(() => slack.posted().length === 1, { what: "the answer" });
    const [lookup] = slack.calls("users.info");
    assert.equal(lookup.user, ANA);
    assert.equal(lookup.headers.authorization, `Bearer ${slack.token}`);
    assert.deepEqual(lookup.answer.user.profile.display_name, "ana.lima");
    const said = lastUserText(h.llm.requests[0]);
    assert.match(said, /\[ana\.lima\]: who am I\?/, "the speaker label is the display name");
    assert.ok(!JSON.stringify(h.llm.requests[0].body).includes(ANA), "the id appears nowhere in the model's request");
    await h.settle(`agent:main:slack:group:${CHANNEL}:topic:${m.event.ts}`);

    // Her next mention (a new thread, so another session): the name is known, Slack is not asked.
    h.llm.push({ text: "Still you." });
    const again = mention("and now?", { user: ANA });
    await post(again);
    await h.until(() => slack.posted().length === 2, { what: "the second answer" });
    assert.equal(slack.calls("users.info").length, 1, "users.info asked once for two messages");
    assert.match(lastUserText(h.llm.requests[1]), /\[ana\.lima\]: and now\?/);
    await h.settle(`agent:main:slack:group:${CHANNEL}:topic:${again.event.ts}`);
  });

  test("someone Slack does not know, or a token without users:read, is named by id and still answered", async () => {
    const NOBODY = "U0NOBODY01";
    h.llm.push({ text: "Hello, whoever you are." });
    const m = mention("hi there", { user: NOBODY });
    await post(m);
    await h.until(() => slack.posted().length === 1, { what: "the answer" });
    assert.equal(slack.calls("users.info")[0].answer.error, "user_not_found");
    assert.match(lastUserText(h.llm.requests[0]), new RegExp(`\\[${NOBODY}\\]: hi there`));
    await h.settle(`agent:main:slack:group:${CHANNEL}:topic:${m.event.ts}`);

    // The app was installed without users:read: Slack refuses, the message goes on under the id.
    const BEA = "U0BEA00001";
    slack.addUser(BEA, { displayName: "bea", realName: "Bea Ortiz" });
    slack.state.scopes.delete("users:read");
    h.llm.push({ text: "Hi." });
    const n = mention("hello from bea", { user: BEA });
    await post(n);
    await h.until(() => slack.posted().length === 2, { what: "the second answer" });
    const refused = slack.calls("users.info").at(-1);
    assert.deepEqual([refused.answer.error, refused.answer.needed], ["missing_scope", "users:read"]);
    assert.match(lastUserText(h.llm.requests[1]), new RegExp(`\\[${BEA}\\]: hello from bea`));
    await h.settle(`agent:main:slack:group:${CHANNEL}:topic:${n.event.ts}`);
  });

  test("a shared image is downloaded with the bot token, kept in R2 and shown to the model", async () => {
    const bytes = jpegBytes(30_000);
    const url = slack.serveFile(bytes, "photo.jpg", "image/jpeg");
    const file = { id: "F0RDC39U1", name: "photo.jpg", mimetype: "image/jpeg", size: bytes.length, url_private_download: url };
    h.llm.push({ text: "A nice photo." });
    await post(dm("look at this", { files: [file] }));
    await h.until(() => slack.posted().length === 1, { what: "the answer" });
    const [get] = slack.calls("file");
    assert.equal(get.headers.authorization, `Bearer ${slack.token}`);
    const blocks = h.llm.requests[0].body.messages.filter((m) => m.role === "user").at(-1).content;
    const image = blocks.find((b) => b.type === "image");
    assert.ok(image, JSON.stringify(blocks).slice(0, 300));
    assert.ok(Buffer.from(image.source.data, "base64").equals(bytes), "the exact bytes");
    const stored = await (await h.bucket()).list({ prefix: "media/agent:main:main/" });
    assert.ok(stored.objects.length >= 1);
  });

  test("a rate limit is waited out; a channel the app cannot post to is reported to the owner", async () => {
    slack.fail("chat.postMessage", { status: 429, body: { ok: false, error: "ratelimited" }, headers: { "retry-after": "1" } });
    h.llm.push({ text: "Eventually." });
    await post(dm("are you there?"));
    await h.until(() => slack.posted().length === 1, { what: "the answer after the rate limit", timeoutMs: 10000 });
    assert.equal(slack.calls("chat.postMessage").length, 2, "tried again, once");
    await h.settle("agent:main:main");

    // The app was removed from the channel: Slack answers not_in_channel.
    slack.state.broken.set(CHANNEL, "not_in_channel");
    h.llm.push({ text: "You will not see this." });
    await post(mention("hello"));
    await h.until(() => h.telegram.sent().some((r) => /could not deliver|given up|cannot be reached/i.test(r.body.text)), {
      what: "the owner told on Telegram",
    });
    const note = h.telegram.sent().find((r) => /cannot be reached/i.test(r.body.text));
    assert.match(note.body.text, /not_in_channel/);
    assert.equal(Number(note.body.chat_id), OWNER);
  });

  test("a channel sees the answer being written in one message edited with chat.update, then removed", async () => {
    h.llm.push({ text: "The quick brown fox jumps over the lazy dog and keeps on running far away", pieceDelayMs: 60 });
    const m = mention("tell me about the fox");
    await post(m);
    await h.until(() => slack.calls("chat.delete").length === 1, { what: "the preview removed" });
    const [preview, answer] = slack.posted();
    assert.equal(preview.body.thread_ts, m.event.ts);
    assert.ok(slack.calls("chat.update").length >= 1, "edited as it grew");
    assert.equal(answer.body.text, "The quick brown fox jumps over the lazy dog and keeps on running far away");
    assert.deepEqual(slack.shown(CHANNEL, m.event.ts), [answer.body.text], "the thread ends with the answer only");
  });

  test("a stranger's DM is told their id once, and costs no model call", async () => {
    await post(dm("hi", { user: STRANGER, channel: "D0STRANGER" }));
    await post(dm("hello??", { user: STRANGER, channel: "D0STRANGER" }));
    await h.until(() => slack.posted().length === 1, { what: "the note" });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(slack.posted().length, 1, "once per cooldown");
    assert.match(slack.posted()[0].body.text, new RegExp(`slack:${STRANGER}`));
    assert.equal(h.llm.requests.length, 0);
  });

  test("Slack gets its answer fast: p99 of the ack under 500 ms", async () => {
    const times = [];
    for (let i = 0; i < 40; i++) {
      const body = dm(`quick ${i}`, { user: FRIEND, channel: "D0FRIEND02" });
      const t0 = performance.now();
      const res = await post(body);
      times.push(performance.now() - t0);
      assert.equal(res.status, 200);
    }
    times.sort((a, b) => a - b);
    const p99 = percentile(times, 99);
    console.log(`# slack ack: p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (40 events)`);
    assert.ok(p99 < 500, `p99 ${p99} ms`);
    await h.settle(`agent:main:slack:dm:${FRIEND}`);
  });
});
