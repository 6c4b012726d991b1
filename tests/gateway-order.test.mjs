// End to end: Discord Gateway messages reach their session in the order the
// Gateway sent them, one relay of a channel after the other, each naming
// the message relayed before it (SendOrder.after), so a session does not
// hold them for stragglers (ORDER_HOLD_MS), not even in a burst. The hold is
// set to 3 s here so that a held message is unmistakable.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth } from "./support/hearth.mjs";
import { startDiscord } from "./support/discord.mjs";
import { messageCreate, startGateway } from "./support/discord-gateway.mjs";

const HOLD = 3000;
const PERSON = "100000000000000005";
const GUILD = "200000000000000001";
const CHANNEL = "300000000000000007"; // allowed
const DM = "400000000000000007";
const BOT = "1016612301262041098";
const ADMIN = "gateway-order-admin";
const pat = { id: PERSON, username: "pat", name: "Pat" };
const mention = [{ id: BOT, username: "Hearth", bot: true }];

let h;
let discord;
let gw;
before(async () => {
  discord = await startDiscord();
  gw = await startGateway({ token: discord.botToken, botId: BOT, heartbeatMs: 41250 });
  h = await startHearth({
    bindings: {
      ADMIN_TOKEN: ADMIN,
      DISCORD_GATEWAY: "on",
      DISCORD_GATEWAY_URL: gw.url,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_API_BASE: discord.base,
      ALLOW_FROM: `discord:${CHANNEL},discord:${PERSON}`,
      ORDER_HOLD_MS: String(HOLD),
      USAGE_SETTLE_MS: "0",
    },
  });
  await h.fetch("/api/agents/main/gateway", { headers: { authorization: `Bearer ${ADMIN}` } });
  await h.until(() => gw.live() && gw.live().session, { what: "gateway ready", timeoutMs: 20000 });
});
after(async () => {
  await h.close();
  await gw.close();
  await discord.close();
});
beforeEach(() => {
  h.llm.reset();
  discord.reset();
});

const posts = (channel) => discord.calls("channel").filter((c) => c.params.channel === channel);

/** Dispatches `m` and waits for its answer in `channel`: the milliseconds it took. */
async function answered(channel, m) {
  const want = posts(channel).length + 1;
  const t0 = performance.now();
  gw.dispatch("MESSAGE_CREATE", m);
  await h.until(() => posts(channel).length >= want, { what: "the answer", timeoutMs: HOLD * 3 });
  return performance.now() - t0;
}

describe("Discord Gateway: relayed in order, not held", () => {
  test("an idle DM follows the message relayed before it: answered at once, not after ORDER_HOLD_MS", async (t) => {
    // The first message since the Gateway object started: nothing vouches
    // that no earlier one is on its way, but nothing came in the last
    // second either (a straggler is unlikely), so it is not held.
    const first = await answered(DM, messageCreate({ channel: DM, author: pat, content: "first" }));
    assert.ok(first < HOLD / 2, `the first message was not held (${first.toFixed(0)} ms)`);
    await h.settle(`agent:main:discord:dm:${PERSON}`);
    // Each later one names the one before, which its session took: no hold.
    const times = [];
    for (const text of ["second", "third", "fourth"]) {
      times.push(await answered(DM, messageCreate({ channel: DM, author: pat, content: text })));
      await h.settle(`agent:main:discord:dm:${PERSON}`);
    }
    t.diagnostic(`first ${first.toFixed(0)} ms; then ${times.map((x) => x.toFixed(0)).join(", ")} ms`);
    for (const t of times) assert.ok(t < HOLD / 2, `answered in ${times.map((x) => x.toFixed(0)).join(", ")} ms, hold ${HOLD} ms`);
    assert.deepEqual(
      posts(DM).map((p) => p.body.content.match(/(first|second|third|fourth)/)?.[1]),
      ["first", "second", "third", "fourth"],
    );
  });

  test("a burst of 20 mentions in one channel, back to back over the socket: 20/20 answered in the order sent, none held", async (t) => {
    const ask = (text) =>
      messageCreate({ channel: CHANNEL, guild: GUILD, author: pat, content: `<@${BOT}> ${text}`, mentions: mention });
    await answered(CHANNEL, ask("hello")); // the channel's first since the object started
    await h.settle(`agent:main:discord:group:${CHANNEL}`);
    // Each turn takes a while, so the burst queues up behind the first.
    h.llm.state.defaultDelayMs = 20;
    const burst = Array.from({ length: 20 }, (_, i) => ask(`B-${i}`));
    const want = posts(CHANNEL).length + 20;
    const t0 = performance.now();
    for (const m of burst) gw.dispatch("MESSAGE_CREATE", m);
    await h.until(() => posts(CHANNEL).length >= want - 19, { what: "the burst's first answer", timeoutMs: HOLD * 3 });
    const firstAnswer = performance.now() - t0;
    await h.until(() => posts(CHANNEL).length >= want, { what: "20 answers", timeoutMs: 30000 });
    t.diagnostic(`the burst's first answer after ${firstAnswer.toFixed(0)} ms, all 20 after ${(performance.now() - t0).toFixed(0)} ms`);
    const got = posts(CHANNEL).slice(-20);
    assert.deepEqual(
      got.map((p) => p.body.content.match(/B-(\d+)/)?.[1]),
      burst.map((_, i) => String(i)),
      "answered in the order sent",
    );
    assert.deepEqual(
      got.map((p) => p.body.message_reference.message_id),
      burst.map((m) => m.id),
      "each answer replies to its message",
    );
    assert.equal(h.llm.state.maxInFlight, 1, "one turn at a time");
    assert.ok(firstAnswer < HOLD / 2, `the burst's first answer after ${firstAnswer.toFixed(0)} ms (hold ${HOLD} ms)`);
  });
});
