// End to end: a group of three agents (mod, perf, sec) in one Telegram
// group, each with its own bot (its own Telegram stand-in and token), and a
// broadcast pair. The LLM stand-in answers as each agent, by the roster in
// its system prompt.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, SECRET, startHearth, systemText, tgUpdate } from "./support/hearth.mjs";
import { startTelegram } from "./support/telegram.mjs";

const TEAM = -100777; // mod (moderator), perf, sec
const PAIR = -100888; // perf and sec, broadcast
let h;
const bots = {};
before(async () => {
  bots.mod = await startTelegram({ token: "111:MOD", username: "mod_bot" });
  bots.perf = await startTelegram({ token: "222:PERF", username: "perf_bot" });
  bots.sec = await startTelegram({ token: "333:SEC", username: "sec_bot" });
  const perAgent = {};
  for (const [a, t] of Object.entries(bots)) {
    perAgent[`TELEGRAM_BOT_TOKEN__${a.toUpperCase()}`] = t.token;
    perAgent[`TELEGRAM_API_BASE__${a.toUpperCase()}`] = t.base;
  }
  h = await startHearth({
    bindings: {
      AGENTS: "main,mod,perf,sec",
      ...perAgent,
      GROUPS: JSON.stringify({
        [`telegram:${TEAM}`]: { agents: ["mod", "perf", "sec"], moderator: "mod", maxAgentTurns: 3 },
        [`telegram:${PAIR}`]: { agents: ["perf", "sec"] },
      }),
    },
  });
  for (const a of ["mod", "perf", "sec"]) await h.putFile(`agents/${a}/MEMORY.md`, `- PRIVATE-${a}`);
});
after(async () => {
  await h.close();
  for (const b of Object.values(bots)) await b.close();
});
beforeEach(() => {
  h.reset();
  for (const b of Object.values(bots)) b.reset?.();
  for (const b of Object.values(bots)) b.state.requests.length = 0;
});

const agentOf = (req) => /You are @(\w+)/.exec(systemText(req))?.[1];
const callsOf = (agent) => h.llm.requests.filter((r) => agentOf(r) === agent);
const said = (agent, chat) => bots[agent].state.requests.filter((r) => r.method === "sendMessage" && Number(r.body.chat_id) === chat).map((r) => r.body.text);
const sessions = (chat) => ["mod", "perf", "sec"].map((a) => `agent:${a}:telegram:group:${chat}`);
const history = async (key) => (await h.sessionStatus(key)).messages ?? [];
const textsOf = (messages) =>
  messages.map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join(" ")));

/** One human message as every bot of the group receives it (same message id, an update each). */
async function post(chat, text, { to = ["mod", "perf"], entities } = {}) {
  const u = tgUpdate({ from: OWNER, chat, text, entities });
  for (const [i, agent] of to.entries()) {
    const res = await h.sendUpdate({ ...u, update_id: u.update_id * 10 + i }, { agent });
    assert.equal(res.status, 200);
  }
  return u.message;
}

async function quiet(chat) {
  const keys = chat === PAIR ? sessions(PAIR).slice(1) : sessions(chat);
  // Relays start new turns after a turn ends: settle until nothing moves.
  for (let i = 0; i < 3; i++) {
    await h.settle(...keys);
    await new Promise((r) => setTimeout(r, 150));
  }
  await h.settle(...keys);
}

describe("a group of agents", () => {
  test("no mention: the moderator decides, its @mention hands the turn to the specialist, everyone reads the thread", async () => {
    h.llm.state.responder = (body) => {
      const me = /You are @(\w+)/.exec(JSON.stringify(body.system))?.[1];
      if (me === "mod") return { text: "@perf" };
      if (me === "perf") return { text: "Cache the read-heavy endpoints in Redis." };
      return { text: "sec should not have been asked" };
    };
    await post(TEAM, "How do we scale this API to handle 10x traffic?");
    await h.until(() => said("perf", TEAM).length === 1, { what: "perf's answer" });
    await quiet(TEAM);
    assert.deepEqual(said("mod", TEAM), ["@perf"], "the moderator's hand-over, through its own bot");
    assert.deepEqual(said("perf", TEAM), ["Cache the read-heavy endpoints in Redis."], "perf answers through its bot");
    assert.deepEqual(said("sec", TEAM), []);
    assert.equal(callsOf("mod").length, 1, "the message was routed once although two bots got it");
    assert.equal(callsOf("perf").length, 1);
    assert.equal(callsOf("sec").length, 0);
    // perf saw who said what.
    const perfPrompt = JSON.stringify(callsOf("perf")[0].body.messages);
    assert.match(perfPrompt, /How do we scale this API/);
    assert.match(perfPrompt, /\[mod \(agent\)\]: @perf/);
    // sec said nothing but has the whole thread, with authors.
    const secThread = textsOf(await history(sessions(TEAM)[2])).join("\n");
    assert.match(secThread, /Olga.*How do we scale/);
    assert.match(secThread, /\[mod \(agent\)\]: @perf/);
    assert.match(secThread, /\[perf \(agent\)\]: Cache the read-heavy endpoints in Redis\./);
    // Personas stay apart, and no private file reaches a group prompt.
    for (const r of h.llm.requests) assert.doesNotMatch(JSON.stringify(r.body), /PRIVATE-/);
    assert.match(systemText(callsOf("mod")[0]), /moderator/);
  });

  test("a direct @mention goes to that agent alone; the moderator is not involved", async () => {
    h.llm.state.responder = (body) => ({ text: `answer from ${/You are @(\w+)/.exec(JSON.stringify(body.system))?.[1]}` });
    const text = "@sec_bot what's the security risk of exposing /metrics?";
    await post(TEAM, text, { to: ["sec", "mod"], entities: [{ type: "mention", offset: 0, length: 8 }] });
    await h.until(() => said("sec", TEAM).length === 1, { what: "sec's answer" });
    await quiet(TEAM);
    assert.deepEqual(said("sec", TEAM), ["answer from sec"]);
    assert.equal(callsOf("mod").length + callsOf("perf").length, 0);
    const modThread = textsOf(await history(sessions(TEAM)[0])).join("\n");
    assert.match(modThread, /\[sec \(agent\)\]: answer from sec/, "the moderator heard it");
  });

  test("without a moderator, a message with no mention reaches every agent (broadcast)", async () => {
    h.llm.state.responder = (body) => ({ text: `hi from ${/You are @(\w+)/.exec(JSON.stringify(body.system))?.[1]}` });
    await post(PAIR, "good morning, team", { to: ["perf", "sec"] });
    await h.until(() => said("perf", PAIR).length === 1 && said("sec", PAIR).length === 1, { what: "both answers" });
    await quiet(PAIR);
    assert.equal(callsOf("perf").length, 1);
    assert.equal(callsOf("sec").length, 1);
  });

  test("maxAgentTurns stops a ping-pong the agents try to start", async () => {
    h.llm.state.responder = (body) => {
      const me = /You are @(\w+)/.exec(JSON.stringify(body.system))?.[1];
      return { text: me === "perf" ? "I disagree, @sec: caching first." : "No, @perf: threat model first." };
    };
    await post(TEAM, "@perf_bot caching or security first?", { to: ["perf"], entities: [{ type: "mention", offset: 0, length: 9 }] });
    await h.until(() => said("perf", TEAM).length >= 1, { what: "perf starts" });
    await quiet(TEAM);
    const replies = [...said("perf", TEAM), ...said("sec", TEAM)];
    assert.equal(replies.length, 3, `maxAgentTurns = 3: ${JSON.stringify(replies)}`);
    assert.equal(callsOf("perf").length, 2);
    assert.equal(callsOf("sec").length, 1);
    // Nothing more happens later.
    await new Promise((r) => setTimeout(r, 500));
    await quiet(TEAM);
    assert.equal(h.llm.requests.length, 3);
    // The last word still reached the others' threads, as a message to read.
    const secThread = textsOf(await history(sessions(TEAM)[2])).join("\n");
    assert.equal((secThread.match(/\[perf \(agent\)\]: I disagree/g) ?? []).length, 2);
  });

  test("a model that always hands over to both others: the LLM calls stay within 2 × maxAgentTurns + 2 in all", async () => {
    h.llm.state.responder = (body) => {
      const me = /You are @(\w+)/.exec(JSON.stringify(body.system))?.[1];
      return { text: ["mod", "perf", "sec"].filter((a) => a !== me).map((a) => `@${a}`).join(" ") };
    };
    await post(TEAM, "@perf_bot caching or security first?", { to: ["perf"], entities: [{ type: "mention", offset: 0, length: 9 }] });
    await h.until(() => said("perf", TEAM).length >= 1, { what: "perf starts" });
    await quiet(TEAM);
    await new Promise((r) => setTimeout(r, 500));
    await quiet(TEAM);
    const bound = 2 * 3 + 2;
    assert.ok(h.llm.requests.length <= bound, `${h.llm.requests.length} LLM calls for one message (bound ${bound})`);
    assert.ok(h.llm.requests.length >= 2, "the hand-over happened");
    // One chain: each reply handed the turn to one agent, the first it named.
    assert.deepEqual(h.llm.requests.slice(0, 3).map(agentOf), ["perf", "mod", "perf"]);
  });
});
