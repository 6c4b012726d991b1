// End to end: messages answered in the order their person sent them, when
// their webhooks overlap and overtake each other. Telegram delivers a
// webhook's updates over up to 40 parallel connections (Slack's Events API
// posts each event on its own request): here every message is sent 15 ms
// after the one before, all requests in flight together, and about half
// arrive after the one sent just after them (support/burst.mjs). The
// answers must come in the order sent. And a message after a pause is not
// held for stragglers that nothing says are coming (ORDER_HOLD_MS is 3 s
// there, so that a hold is unmistakable).
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { after, before, beforeEach, describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import { burst, GAP_MS, inPlace } from "./support/burst.mjs";
import { startHearth, tgUpdate } from "./support/hearth.mjs";
import { signedHeaders, startSlack } from "./support/slack.mjs";

// One fresh chat per case: its first message has nothing before it to follow.
const BURST = 5101;
const RESET = 5102;
const COMPACT = 5103;
const PAUSE = [5111, 5112, 5113];
const SLACK_SECRET = "slack-signing-secret-for-order";
const SLACK_FRIEND = "U0ORDER001";
const SLACK_HOLD = 1500;

/** `burst` (support/burst.mjs), every webhook acknowledged and the requests truly overtaking. */
async function overtaking(n, send, seed) {
  const { responses, overtaken } = await burst(n, send, seed);
  for (const r of responses) assert.equal(r.status, 200, "every webhook acknowledged");
  assert.ok(overtaken >= n / 4, `the requests really overtook each other (${overtaken} of ${n} left after a later one)`);
}

const sentTo = (h, chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);
const lastText = (body) => {
  const m = body.messages[body.messages.length - 1];
  return typeof m.content === "string" ? m.content : m.content.map((b) => b.text || "").join("\n");
};
const isCompaction = (body) => lastText(body).includes("being compacted");
const isExtraction = (body) => lastText(body).includes("about to be archived");

/** A busy thread for the length of a test: the machine under load. */
function load() {
  const w = new Worker("const end = Date.now() + 60000; while (Date.now() < end) {}", { eval: true });
  return () => w.terminate();
}

describe("telegram: turns in the order sent", () => {
  let h;
  before(async () => {
    h = await startHearth({
      bindings: {
        ALLOW_FROM: `telegram:${BURST},telegram:${RESET},telegram:${COMPACT}`,
        CONTEXT_WINDOW: "6000",
        CONTEXT_RESERVE: "200",
      },
    });
    // A Worker that has been running: its isolate received the bot's update
    // before the burst (here an edit, which starts no turn), so it can tell
    // when one of the burst's is still on its way.
    assert.equal((await h.sendUpdate(tgUpdate({ from: BURST, text: "edited", edited: true }))).status, 200);
  });
  after(() => h.close());
  beforeEach(() => h.reset());

  test("30 messages 15 ms apart, overtaking each other, are answered 30/30 in the order sent", async () => {
    // Each turn takes a while: messages queue up behind it, out of order.
    h.llm.state.defaultDelayMs = 20;
    const updates = Array.from({ length: 30 }, (_, i) => tgUpdate({ from: BURST, text: `K-${i}` }));
    await overtaking(30, (i) => h.sendUpdate(updates[i]), 23);
    await h.until(() => sentTo(h, BURST).length === 30, { what: "30 answers", timeoutMs: 30000 });
    const want = updates.map((_, i) => `echo: K-${i}`);
    const got = sentTo(h, BURST);
    assert.equal(inPlace(got, want), 30, `answered ${got.map((t) => t.slice(6)).join(",")}`);
    // One turn at a time, each seeing every earlier message in its history.
    assert.equal(h.llm.state.maxInFlight, 1);
    const last = h.llm.requests.at(-1).body.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m));
    assert.deepEqual(
      last.map((m) => m.match(/K-(\d+)/)?.[1]).filter(Boolean),
      Array.from({ length: 30 }, (_, i) => String(i)),
    );
  });

  test("20 messages with a /reset in the middle, in a burst: 20/20, the reset where it was sent", async () => {
    h.llm.state.defaultDelayMs = 10;
    h.llm.state.responder = (body) => (isExtraction(body) ? { text: "NONE" } : null);
    const texts = Array.from({ length: 20 }, (_, i) => (i === 10 ? "/reset" : `R-${i}`));
    const updates = texts.map((text) => tgUpdate({ from: RESET, text }));
    await overtaking(20, (i) => h.sendUpdate(updates[i]), 7);
    await h.until(() => sentTo(h, RESET).length === 20, { what: "20 answers", timeoutMs: 30000 });
    const got = sentTo(h, RESET);
    const want = texts.map((t) => (t === "/reset" ? got[10] : `echo: ${t}`));
    assert.match(got[10], /Fresh start\. I archived our conversation \(20 messages\)/, "ten messages and ten answers before it");
    assert.equal(inPlace(got, want), 20, `answered ${got.join(" | ")}`);
    // The archive holds exactly what was sent before the reset, in order…
    const bucket = await h.bucket();
    const archives = [];
    for (const o of (await bucket.list({ prefix: "agents/main/sessions/", include: ["customMetadata"] })).objects) {
      if (o.customMetadata?.sessionKey === `agent:main:telegram:dm:${RESET}`) archives.push(o.key);
    }
    assert.equal(archives.length, 1, `${archives}`);
    const archived = gunzipSync(Buffer.from(await (await bucket.get(archives[0])).arrayBuffer()))
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((m) => m.role === "user")
      .map((m) => JSON.stringify(m).match(/R-(\d+)/)[1]);
    assert.deepEqual(archived, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    // …and the new session what was sent after it.
    await h.settle(`agent:main:telegram:dm:${RESET}`);
    const status = await h.sessionStatus(`agent:main:telegram:dm:${RESET}`);
    const now = status.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m).match(/R-(\d+)/)[1]);
    assert.deepEqual(now, ["11", "12", "13", "14", "15", "16", "17", "18", "19"]);
  });

  test("compaction under load: answers in the order sent across compactions", async () => {
    const stop = load();
    try {
      h.llm.state.defaultDelayMs = 10;
      h.llm.state.responder = (body) => (isCompaction(body) ? { text: "## Summary\nOlga asked about Rome.\n## Memories\n- none" } : null);
      const long = "tell me more about Rome and its history ".repeat(12);
      const updates = Array.from({ length: 16 }, (_, i) => tgUpdate({ from: COMPACT, text: `C-${i}: ${long}` }));
      await overtaking(16, (i) => h.sendUpdate(updates[i]), 11);
      await h.until(() => sentTo(h, COMPACT).length === 16, { what: "16 answers", timeoutMs: 60000 });
      const got = sentTo(h, COMPACT).map((t) => t.match(/^echo: (C-\d+):/)?.[1]);
      const want = updates.map((_, i) => `C-${i}`);
      assert.equal(inPlace(got, want), 16, `answered ${got.join(",")}`);
      assert.ok(h.llm.requests.filter((r) => isCompaction(r.body)).length >= 1, "the history was compacted on the way");
    } finally {
      await stop();
    }
  });
});

describe("telegram: a message after a pause is not held", () => {
  const HOLD = 1500;
  /** One message from `chat` to its answer: ms. */
  async function answered(h, chat, text) {
    const want = sentTo(h, chat).length + 1;
    const t0 = performance.now();
    assert.equal((await h.sendUpdate(tgUpdate({ from: chat, text }))).status, 200);
    await h.until(() => sentTo(h, chat).length >= want, { what: `the answer to ${text}`, timeoutMs: HOLD * 3 });
    return performance.now() - t0;
  }

  test("a fresh Worker's first message, a new chat's, chats taking turns and a quick follow-up start at once", async (t) => {
    const h = await startHearth({ bindings: { ALLOW_FROM: PAUSE.map((c) => `telegram:${c}`).join(","), ORDER_HOLD_MS: String(HOLD) } });
    try {
      const times = {};
      // The isolate's first update: it knows nothing before it, and the chat had nothing in the last second.
      times.first = await answered(h, PAUSE[0], "first ever");
      // What came before its first update is settled once a hold has passed since.
      await new Promise((r) => setTimeout(r, HOLD));
      // A new chat's first message: the isolate saw every update before it arrive.
      times.newChat = await answered(h, PAUSE[1], "hello");
      // Two chats taking turns: the update before each went to the other chat.
      times.turns = [];
      for (let i = 0; i < 4; i++) times.turns.push(await answered(h, PAUSE[1 + (i % 2)], `turn ${i}`));
      // A second message right after an answer (well within a second).
      times.followUp = await answered(h, PAUSE[2], "and another thing");
      t.diagnostic(JSON.stringify(times, (k, v) => (typeof v === "number" ? Math.round(v) : v)));
      for (const ms of [times.first, times.newChat, ...times.turns, times.followUp]) {
        assert.ok(ms < HOLD / 2, `answered in ${JSON.stringify(times, (k, v) => (typeof v === "number" ? Math.round(v) : v))} ms (hold ${HOLD})`);
      }
    } finally {
      await h.close();
    }
  });

  test("a burst reaching a fresh Worker: the first message, overtaken, is answered first when it comes while the next one's turn prepares", async () => {
    const h = await startHearth({ bindings: { ALLOW_FROM: `telegram:${PAUSE[0]}` } });
    try {
      // "typing…" takes as long as a real round trip to Telegram can: the
      // turn of K-1 prepares (typing, recall, the workspace) meanwhile.
      h.telegram.state.latencyMs.sendChatAction = 400;
      const [k0, k1] = [tgUpdate({ from: PAUSE[0], text: "K-0" }), tgUpdate({ from: PAUSE[0], text: "K-1" })];
      // K-1 overtakes K-0 and reaches a Worker that knows nothing yet.
      const second = h.sendUpdate(k1);
      await new Promise((r) => setTimeout(r, 100));
      const first = h.sendUpdate(k0);
      for (const r of await Promise.all([second, first])) assert.equal(r.status, 200);
      await h.until(() => sentTo(h, PAUSE[0]).length === 2, { what: "two answers" });
      assert.deepEqual(sentTo(h, PAUSE[0]), ["echo: K-0", "echo: K-1"]);
      const asked = h.llm.requests.map((r) => lastText(r.body));
      assert.deepEqual(asked.map((t) => t.match(/K-\d/)?.[0]), ["K-0", "K-1"], "K-1's turn stepped back before its model call");
    } finally {
      await h.close();
    }
  });
});

describe("slack: turns in the order sent", () => {
  let h;
  let slack;
  before(async () => {
    slack = await startSlack({ botUser: "U0LAN0Z89" });
    h = await startHearth({
      bindings: {
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_BOT_TOKEN: slack.token,
        SLACK_API_BASE: slack.base,
        ALLOW_FROM: `slack:${SLACK_FRIEND}`,
        STREAM_REPLIES: "off",
        // Long enough that a held message is unmistakable.
        ORDER_HOLD_MS: String(SLACK_HOLD),
      },
    });
  });
  after(async () => {
    await h.close();
    await slack.close();
  });
  beforeEach(() => {
    h.reset();
    slack.reset();
  });

  /** A DM event as Slack posts it; `ts` made by Slack's clock as the message was sent. */
  function dm(text, ts, n) {
    return JSON.stringify({
      token: "z26uFbvR1xHJEdHE1OQiO6t8",
      team_id: "T123ABC456",
      api_app_id: "A123ABC456",
      type: "event_callback",
      event_id: `Ev0ORDER${n}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ team_id: "T123ABC456", user_id: "U0LAN0Z89", is_bot: true, is_enterprise_install: false }],
      event: { type: "message", channel: "D0ORDER001", user: SLACK_FRIEND, text, ts, event_ts: ts, channel_type: "im" },
    });
  }

  test("30 messages 15 ms apart, overtaking each other, right after a message (a conversation going on), are answered 30/30 in the order sent", async () => {
    // Slack numbers nothing without gaps: a session holds a message for
    // stragglers only when another came within the last second. Here the
    // person wrote a moment before the burst.
    const pre = dm("S-pre", `${Math.floor(Date.now() / 1000) - 1}.000001`, 99);
    assert.equal((await h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SLACK_SECRET, pre), body: pre })).status, 200);
    await h.until(() => slack.posted().length === 1, { what: "the first answer" });
    slack.reset();
    h.llm.state.defaultDelayMs = 20;
    const t0 = Date.now();
    // Slack's ts: seconds and microseconds of when each was posted, 15 ms apart.
    const tsOf = (i) => {
      const us = (t0 + i * GAP_MS) * 1000;
      return `${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, "0")}`;
    };
    const bodies = Array.from({ length: 30 }, (_, i) => dm(`S-${i}`, tsOf(i), i));
    await overtaking(30, (i) => h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SLACK_SECRET, bodies[i]), body: bodies[i] }), 5);
    await h.until(() => slack.posted().length === 30, { what: "30 answers", timeoutMs: 30000 });
    const got = slack.posted().map((p) => p.body.text);
    const want = bodies.map((_, i) => `echo: S-${i}`);
    assert.equal(inPlace(got, want), 30, `answered ${got.map((t) => t.slice(6)).join(",")}`);
  });

  test("a message after a pause is answered at once, not held", async () => {
    await new Promise((r) => setTimeout(r, 1100)); // nothing from this person in the last second
    const us = Date.now() * 1000;
    const body = dm("after a pause", `${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, "0")}`, 200);
    const t0 = performance.now();
    assert.equal((await h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SLACK_SECRET, body), body })).status, 200);
    await h.until(() => slack.posted().length === 1, { what: "the answer" });
    const ms = performance.now() - t0;
    assert.ok(ms < SLACK_HOLD / 2, `answered in ${ms.toFixed(0)} ms (hold ${SLACK_HOLD} ms)`);
  });
});
