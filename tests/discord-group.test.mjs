// End to end: a group of agents in a Discord channel. Two agents (mod, the
// moderator, and perf), each with its own bot: its own token, its own
// Gateway connection (a Gateway stand-in per bot) and its own REST API
// stand-in. Discord sends every bot in the channel the same MESSAGE_CREATE,
// so each test dispatches it on both Gateways, in both orders: who answers
// must depend on the message, not on which bot read it first.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth, systemText } from "./support/hearth.mjs";
import { startDiscord } from "./support/discord.mjs";
import { messageCreate, startGateway } from "./support/discord-gateway.mjs";

const GUILD = "200000000000000001";
const TEAM = "300000000000000011"; // mod (moderator) and perf
const PAIR = "300000000000000012"; // mod and perf, broadcast
const PERSON = "100000000000000005";
const ADMIN = "group-admin";
const IDS = { mod: "1111111111111111111", perf: "2222222222222222222" };
// A bot token starts with the base64 of the bot's user id (how Hearth knows a bot's mention).
const tokenOf = (id) => `${Buffer.from(id).toString("base64").replace(/=+$/, "")}.GxYzAb.${id.slice(0, 6)}secret`;

let h;
const rest = {};
const gws = {};
before(async () => {
  const perAgent = {};
  for (const [agent, id] of Object.entries(IDS)) {
    const token = tokenOf(id);
    rest[agent] = await startDiscord({ botToken: token });
    gws[agent] = await startGateway({ token, botId: id, heartbeatMs: 400 });
    const A = agent.toUpperCase();
    Object.assign(perAgent, {
      [`DISCORD_BOT_TOKEN__${A}`]: token,
      [`DISCORD_API_BASE__${A}`]: rest[agent].base,
      [`DISCORD_GATEWAY_URL__${A}`]: gws[agent].url,
      [`DISCORD_GATEWAY__${A}`]: "on",
    });
  }
  h = await startHearth({
    bindings: {
      AGENTS: "main,mod,perf",
      ADMIN_TOKEN: ADMIN,
      ...perAgent,
      GROUPS: JSON.stringify({
        [`discord:${TEAM}`]: { agents: ["mod", "perf"], moderator: "mod" },
        [`discord:${PAIR}`]: { agents: ["mod", "perf"], mode: "broadcast" },
      }),
    },
  });
  for (const agent of Object.keys(IDS)) {
    await h.until(async () => {
      const res = await h.fetch(`/api/agents/${agent}/gateway`, { headers: { authorization: `Bearer ${ADMIN}` } });
      return (await res.json()).phase === "ready";
    }, { what: `${agent}'s gateway ready` });
  }
});
after(async () => {
  await h.close();
  for (const x of [...Object.values(rest), ...Object.values(gws)]) await x.close();
});
beforeEach(() => {
  h.reset();
  for (const r of Object.values(rest)) r.reset();
  h.llm.state.responder = (body) => ({ text: `answer from ${/You are @(\w+)/.exec(JSON.stringify(body.system))?.[1]}` });
});

const agentOf = (req) => /You are @(\w+)/.exec(systemText(req))?.[1];
const posted = (agent, channel) => rest[agent].calls("channel").filter((c) => c.params.channel === channel).map((c) => c.body.content);
const keys = (channel) => Object.keys(IDS).map((a) => `agent:${a}:discord:group:${channel}`);
const mention = (agent) => ({ id: IDS[agent], username: `${agent}-bot`, bot: true });

/** One person's message as Discord sends it to every bot of the channel, in `order`. */
function post(channel, content, { mentions = [], order = ["perf", "mod"] } = {}) {
  const m = messageCreate({ channel, guild: GUILD, author: { id: PERSON, username: "pat", name: "Pat" }, content, mentions });
  for (const agent of order) gws[agent].dispatch("MESSAGE_CREATE", m);
  return m;
}

async function quiet(channel) {
  for (let i = 0; i < 3; i++) {
    await h.settle(...keys(channel));
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe("a group of agents on Discord, each bot with its own Gateway", () => {
  for (const order of [["perf", "mod"], ["mod", "perf"]]) {
    test(`<@perf's bot> reaches perf alone (received by ${order.join(" then ")})`, async () => {
      const m = post(TEAM, `<@${IDS.perf}> is the p99 latency fine?`, { mentions: [mention("perf")], order });
      await h.until(() => posted("perf", TEAM).length === 1, { what: "perf's answer" });
      await quiet(TEAM);
      assert.deepEqual(posted("perf", TEAM), ["answer from perf"], "through perf's own bot");
      assert.deepEqual(posted("mod", TEAM), [], "the moderator is not involved");
      assert.deepEqual(h.llm.requests.map(agentOf), ["perf"], "one LLM call, perf's");
      assert.equal(rest.perf.calls("channel")[0].body.message_reference.message_id, m.id);
      // Whoever read it first, the agents read the same words: the mention spelled as @perf.
      const text = JSON.stringify(h.llm.requests[0].body.messages);
      assert.match(text, /\[Pat\]: @perf is the p99 latency fine\?/);
    });
  }

  test("no mention: the moderator answers, through its bot", async () => {
    post(TEAM, "how do we scale this API?");
    await h.until(() => posted("mod", TEAM).length === 1, { what: "the moderator's answer" });
    await quiet(TEAM);
    assert.deepEqual(posted("mod", TEAM), ["answer from mod"]);
    assert.deepEqual(posted("perf", TEAM), []);
    assert.deepEqual(h.llm.requests.map(agentOf), ["mod"]);
  });

  test("no mention in a broadcast group: every agent answers once", async () => {
    post(PAIR, "good morning, team", { order: ["mod", "perf"] });
    await h.until(() => posted("mod", PAIR).length === 1 && posted("perf", PAIR).length === 1, { what: "both answers" });
    await quiet(PAIR);
    assert.deepEqual(h.llm.requests.map(agentOf).sort(), ["mod", "perf"]);
  });
});
