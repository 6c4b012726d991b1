// End to end, in workerd, with real Telegram updates (tests/fixtures/real-world/
// telegram/, sources in its SOURCES.md): messages without text reach the model
// described, replies, quotes and forwards carry their context, and a stranger
// flooding the bot is told their id once.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, GROUP, OWNER, startHearth } from "./support/hearth.mjs";
import { userBlocks } from "./support/media.mjs";

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures/real-world/telegram");
// Modernizr's 1×1 lossless WebP: a real image, as a sticker's bytes.
const WEBP_1X1 = Buffer.from("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==", "base64");

let nextUpdateId = 900_000;
/**
 * A fixture update as Telegram would send it to this bot: the file verbatim,
 * except a fresh update_id, and the sender and chat made someone this agent
 * answers (the fixtures' own ids belong to strangers).
 */
function fixtureUpdate(name, { from = OWNER, chat, botId } = {}) {
  const u = JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
  u.update_id = nextUpdateId++;
  const m = u.message;
  m.from.id = from;
  m.chat.id = chat ?? from;
  // A reply to "the bot" of the fixture is a reply to this bot.
  if (botId && m.reply_to_message?.from?.is_bot) m.reply_to_message.from.id = botId;
  return u;
}

/** The text of the user message the model was asked about (the last one). */
function lastUserText(req) {
  const user = (req.body.messages || []).filter((m) => m.role === "user").at(-1);
  return user.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

let h;
before(async () => {
  h = await startHearth();
});
after(() => h.close());
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);

describe("messages without text", () => {
  const cases = [
    ["nutgram-location.json", [/\[location: 41\.899977, 12\.501028\]/]],
    ["nutgram-dice.json", [/🎲 die thrown: 4 \(of 6\)/]],
    ["nutgram-contact.json", [/\[contact: 911, phone 911/, /vCard: FN:911/]],
    ["nutgram-message-poll.json", [/poll: "What's your favorite color\?"/, /"Red"/, /"Blue"/]],
    ["nutgram-venue.json", [/\[venue: McDonald's, Via Giolitti 65 \(41\.899977, 12\.501028\)\]/]],
    ["nutgram-sticker.json", [/\[sticker 🤣 from the set "asas"\]/]],
  ];
  for (const [file, patterns] of cases) {
    test(`${file}: the model reads what was sent, and the reply arrives`, async () => {
      if (file === "nutgram-sticker.json") {
        h.telegram.state.fileBytes.set("yhufjikjhgjkghjffghgf", { bytes: WEBP_1X1, path: "stickers/file_1.webp" });
      }
      const r = await h.sendUpdate(fixtureUpdate(file));
      assert.equal(r.status, 200);
      await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });
      assert.equal(h.llm.requests.length, 1);
      const req = h.llm.requests[0];
      const text = lastUserText(req);
      for (const p of patterns) assert.match(text, p);
      for (const b of userBlocks(req)) {
        if (b.type === "text") assert.notEqual(b.text.trim(), "", "an empty text block reached the provider");
      }
      // The stand-in echoes the last text: the description came back as the answer (sent as HTML).
      const html = (t) => t.replaceAll("&quot;", '"').replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
      assert.match(html(sentTo(OWNER)[0].body.text), patterns[0]);
      if (file === "nutgram-sticker.json") {
        const image = userBlocks(req).find((b) => b.type === "image");
        assert.ok(image, "the sticker itself reaches the model as an image");
        assert.equal(image.source.media_type, "image/webp");
      }
    });
  }

  test("service messages and non-message updates start no turn", async () => {
    for (const file of ["nutgram-new-chat-members.json", "nutgram-pinned-message.json"]) {
      const r = await h.sendUpdate(fixtureUpdate(file));
      assert.equal(r.status, 200);
      assert.match(await r.text(), /ignored: a service message/);
    }
    const poll = JSON.parse(fs.readFileSync(path.join(FIXTURES, "nutgram-poll-answer.json"), "utf8"));
    const r = await h.sendUpdate(poll);
    assert.match(await r.text(), /ignored: not a message \(poll_answer\)/);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(h.llm.requests.length, 0);
  });
});

describe("reply, quote and forward context", () => {
  const cases = [
    // In a group, replying to the bot's message with a quote of part of it.
    [
      "spec-reply-with-quote.json",
      { from: FRIEND, chat: GROUP },
      '[Replying to your message: "The meeting moved to Thursday at 10:00. Bring the Q3 numbers and the draft budget.", quoting "Bring the Q3 numbers"]\n[Mario (@MarioBros)]: @hearth_bot what do you think of this?',
    ],
    // Telegram's own example of a reply (the replied-to message has no sender).
    ["botapi-doc-reply.json", {}, '[Replying to a message: "Original"]\n/start'],
    // A reply to a channel post elsewhere: its origin and the quote.
    [
      "spec-external-reply-channel.json",
      {},
      '[Replying to a message from the channel "Daily News (@dailynews)" (signed Ed.): "[photo]", quoting "rates rise again"]\nis this true?',
    ],
    ["spec-forward-origin-hidden-user.json", {}, "[Forwarded from Anna K.]\ncan you summarise this?"],
    ["nutgram-message-forward-origin.json", {}, "[Forwarded from Stickers (@Stickers)]\nCiao"],
    ["botapi-doc-forward-from-user.json", {}, "[Forwarded from Forward Firstname Forward Lastname]\n/start"],
  ];
  for (const [file, who, expected] of cases) {
    test(`${file}: the model sees what the message refers to`, async () => {
      const chat = who.chat ?? who.from ?? OWNER;
      const r = await h.sendUpdate(fixtureUpdate(file, { ...who, botId: h.telegram.botId }));
      assert.equal(r.status, 200);
      await h.until(() => sentTo(chat).length === 1, { what: "reply" });
      assert.equal(h.llm.requests.length, 1);
      const text = lastUserText(h.llm.requests[0]);
      assert.ok(text.endsWith(expected), `user message:\n${text}`);
    });
  }
});

describe("strangers", () => {
  test("300 messages from a stranger cause one notice and no LLM call", async () => {
    const stranger = 55501;
    const updates = Array.from({ length: 300 }, (_, i) =>
      fixtureUpdate(i % 2 ? "nutgram-text.json" : "nutgram-location.json", { from: stranger }),
    );
    for (let i = 0; i < updates.length; i += 50) {
      const batch = await Promise.all(updates.slice(i, i + 50).map((u) => h.sendUpdate(u)));
      assert.ok(batch.every((r) => r.status === 200));
    }
    await h.until(() => sentTo(stranger).length >= 1, { what: "the notice" });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(sentTo(stranger).length, 1, "one notice, not one per message");
    assert.match(sentTo(stranger)[0].body.text, /telegram:55501/);
    assert.equal(h.llm.requests.length, 0);
    // Another stranger is still told.
    await h.sendUpdate(fixtureUpdate("nutgram-text.json", { from: 55502 }));
    await h.until(() => sentTo(55502).length === 1, { what: "the other stranger's notice" });
  });
});

// The cooldown lives in the Agent object, not in the Worker's memory: a new
// isolate (here: workerd restarted on the same state) does not tell again.
describe("stranger cooldown across isolates", () => {
  let p;
  before(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-strangers-"));
    p = await startHearth({ persist: dir });
  });
  after(() => p.close());

  test("after a restart the stranger is still not told again", async () => {
    const stranger = 55601;
    const told = () => p.telegram.sent().filter((r) => Number(r.body.chat_id) === stranger);
    await p.sendUpdate(fixtureUpdate("nutgram-text.json", { from: stranger }));
    await p.until(() => told().length === 1, { what: "the notice" });
    await p.restart();
    await p.sendUpdate(fixtureUpdate("nutgram-dice.json", { from: stranger }));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(told().length, 1, "a fresh isolate asked the Agent object and stayed quiet");
  });
});

describe("stranger cooldown off", () => {
  let q;
  before(async () => {
    q = await startHearth({ bindings: { STRANGER_COOLDOWN_MINUTES: "0" } });
  });
  after(() => q.close());

  test("STRANGER_COOLDOWN_MINUTES=0 tells a stranger every time", async () => {
    const stranger = 55701;
    for (let i = 0; i < 3; i++) await q.sendUpdate(fixtureUpdate("nutgram-text.json", { from: stranger }));
    await q.until(() => q.telegram.sent().filter((r) => Number(r.body.chat_id) === stranger).length === 3, { what: "three notices" });
  });
});
