// End to end: messages answered in the order their person sent them, when
// their webhooks overlap and overtake each other. Telegram delivers a
// webhook's updates over up to 40 parallel connections (Slack's Events API
// posts each event on its own request): here every message is sent 15 ms
// after the one before, all requests in flight together, and about half
// arrive after the one sent just after them (helpers/burst.mjs). The
// answers must come in the order sent.
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { after, before, beforeEach, describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import { burst, GAP_MS, inPlace } from "./helpers/burst.mjs";
import { startHearth, tgUpdate } from "./helpers/hearth.mjs";
import { signedHeaders, startSlack } from "./helpers/slack-standin.mjs";

// One fresh chat per case: its first message has nothing before it to follow.
const BURST = 5101;
const RESET = 5102;
const COMPACT = 5103;
const SLACK_SECRET = "slack-signing-secret-for-order";
const SLACK_FRIEND = "U0ORDER001";

/** `burst` (helpers/burst.mjs), every webhook acknowledged and the requests truly overtaking. */
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

  test("30 messages 15 ms apart, overtaking each other, are answered 30/30 in the order sent", async () => {
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
});
