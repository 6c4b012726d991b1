// Asking before acting on Discord and Slack, end to end in workerd: the
// owner gets Approve / Deny buttons in their DM with the bot (Discord
// message components; Slack Block Kit), a tap arrives as the platform
// sends it (a signed MESSAGE_COMPONENT interaction, type 3; a signed,
// form-encoded `block_actions` payload), only the owner's counts, and the
// parked turn goes on to its answer.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { startHearth, toolResults } from "./support/hearth.mjs";
import { discordKeys, snowflake, startDiscord } from "./support/discord.mjs";
import { interactionBody, signedFormHeaders, signedHeaders, startSlack } from "./support/slack.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fixture = (dir, name) => JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/real-world", dir, name), "utf8"));

async function startSite() {
  const hits = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("Soup tonight.");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { port: server.address().port, hits, url: (p) => `http://127.0.0.1:${server.address().port}${p}`, close: () => new Promise((r) => server.close(r)) };
}

let site;
before(async () => (site = await startSite()));
after(async () => site?.close());

describe("on Discord: message components and their interaction", () => {
  const OWNER = "100000000000000001";
  const FRIEND = "100000000000000002";
  const dmChannel = (user) => "4" + user.slice(1);
  let h, discord, keys;
  before(async () => {
    discord = await startDiscord();
    keys = discordKeys();
    h = await startHearth({
      bindings: {
        DISCORD_PUBLIC_KEY: keys.publicHex,
        DISCORD_APPLICATION_ID: discord.appId,
        DISCORD_BOT_TOKEN: discord.botToken,
        DISCORD_API_BASE: discord.base,
        OWNER_IDS: `discord:${OWNER}`,
        ALLOW_FROM: `discord:${FRIEND}`,
        APPROVE_TOOLS: "web_*",
        WEB_FETCH_ALLOW_HOSTS: `127.0.0.1:${site.port}`,
      },
    });
  });
  after(async () => {
    await h?.close();
    await discord?.close();
  });

  const user = (id) => ({ id, username: `user${id.slice(-2)}`, global_name: null, discriminator: "0", avatar: null });
  async function post(body) {
    const raw = JSON.stringify(body);
    const res = await h.mf.dispatchFetch("http://hearth.test/discord/main", { method: "POST", headers: { "content-type": "application/json", ...keys.sign(raw) }, body: raw });
    return { status: res.status, json: await res.json().catch(() => null) };
  }
  /** A button press in a DM, in the shape of a real MESSAGE_COMPONENT interaction (fixture's envelope). */
  function press(from, customId, message) {
    const real = fixture("discord", "interaction-message-component-button.json");
    const { member, guild_id, guild_locale, channel: _c, ...envelope } = real;
    const channel = dmChannel(OWNER);
    return { ...envelope, id: snowflake(), application_id: discord.appId, token: `tok-${snowflake()}`, user: user(from), channel_id: channel, channel: { id: channel, type: 1 }, context: 1, message: { id: message, channel_id: channel, content: "" }, data: { component_type: 2, custom_id: customId } };
  }

  test("the owner approves with a button; anyone else's press does nothing", async () => {
    h.llm.push({ toolCall: { name: "web_fetch", input: { url: site.url("/menu") } } }, { text: "Tonight there is soup." });
    const id = snowflake();
    const ask = { id, application_id: discord.appId, type: 2, token: `tok-${id}`, version: 1, channel_id: dmChannel(OWNER), channel: { id: dmChannel(OWNER), type: 1 }, user: user(OWNER), context: 1, data: { id: "1", name: "ask", type: 1, options: [{ name: "prompt", type: 3, value: "what's on the menu page?" }] } };
    const r = await post(ask);
    assert.equal(r.json.type, 5, "deferred: the turn runs after the answer");
    await h.until(() => discord.calls("channel").some((c) => c.body.components), { what: "the buttons in the owner's DM" });
    assert.equal(discord.calls("dm")[0].body.recipient_id, OWNER);
    const prompt = discord.calls("channel").find((c) => c.body.components);
    assert.equal(prompt.params.channel, dmChannel(OWNER));
    assert.match(prompt.body.content, /Tool: web_fetch/);
    const [yes, no] = prompt.body.components[0].components;
    assert.deepEqual([yes.style, no.style, yes.label, no.label], [3, 4, "✅ Approve", "❌ Deny"]);
    const message = [...discord.state.sent.values()].find((m) => m.components?.length)?.id;
    assert.equal(site.hits.length, 0);
    // Someone else presses it: only they are told, nothing runs.
    const theirs = await post(press(FRIEND, yes.custom_id, message));
    assert.equal(theirs.json.type, 4);
    assert.equal(theirs.json.data.flags, 64);
    assert.match(theirs.json.data.content, /Only my owner/);
    // The owner's press: the message becomes the outcome, without buttons.
    const mine = await post(press(OWNER, yes.custom_id, message));
    assert.equal(mine.status, 200);
    assert.equal(mine.json.type, 7, "UPDATE_MESSAGE");
    assert.match(mine.json.data.content, /✅ Approved/);
    assert.deepEqual(mine.json.data.components, []);
    await h.until(() => discord.calls("original").some((c) => c.body.content === "Tonight there is soup."), { what: "the answer through the interaction" });
    assert.deepEqual(site.hits, ["/menu"]);
    assert.match(toolResults(h.llm.requests[1]).at(-1).text, /Soup tonight/);
    // A second press on the settled request changes nothing.
    const again = await post(press(OWNER, no.custom_id, message));
    assert.match(again.json.data.content, /✅ Approved/);
  });
});

describe("on Slack: Block Kit buttons and block_actions", () => {
  const SECRET = "slack-signing-secret-for-tests";
  const OWNER = "U2147483697";
  const BOT = "U0LAN0Z89";
  const DM = `D${OWNER.slice(1)}`;
  let h, slack;
  before(async () => {
    slack = await startSlack({ botUser: BOT });
    h = await startHearth({
      bindings: {
        SLACK_SIGNING_SECRET: SECRET,
        SLACK_BOT_TOKEN: slack.token,
        SLACK_API_BASE: slack.base,
        OWNER_IDS: `slack:${OWNER}`,
        ALLOW_FROM: "",
        APPROVE_TOOLS: "web_fetch",
        WEB_FETCH_ALLOW_HOSTS: `127.0.0.1:${site.port}`,
        STREAM_REPLIES: "off",
      },
    });
  });
  after(async () => {
    await h?.close();
    await slack?.close();
  });

  let seq = 0;
  function dm(text) {
    const base = fixture("slack", "app-mention-docs.json");
    const ts = `${Math.floor(Date.now() / 1000)}.${String(++seq).padStart(6, "0")}`;
    return { ...base, event_id: `EvP${Date.now()}${seq}`, event_time: Math.floor(Date.now() / 1000), authorizations: [{ team_id: "T123ABC456", user_id: BOT, is_bot: true }], event: { type: "message", channel: DM, user: OWNER, text, ts, event_ts: ts, channel_type: "im" } };
  }
  /** A tap as Slack posts it: the real block_actions payload (bolt-python's), with our button. */
  function tapBody(from, button, channel, ts) {
    const p = fixture("slack", "block-actions-bolt-python.json");
    p.user = { ...p.user, id: from };
    p.container = { ...p.container, channel_id: channel, message_ts: ts, is_ephemeral: false };
    p.channel = { id: channel, name: "directmessage" };
    p.response_url = `${slack.actions}/T111/111/${ts}`;
    p.actions = [{ ...p.actions[0], action_id: button.action_id, value: button.value, text: button.text }];
    return interactionBody(p);
  }
  const tap = (body) => h.fetch("/slack/main", { method: "POST", headers: signedFormHeaders(SECRET, body), body });

  test("the owner approves with a button; a forged or unsigned tap does nothing", async () => {
    h.llm.push({ toolCall: { name: "web_fetch", input: { url: site.url("/tonight") } } }, { text: "Soup, tonight." });
    const event = JSON.stringify(dm("what's on tonight?"));
    assert.equal((await h.fetch("/slack/main", { method: "POST", headers: signedHeaders(SECRET, event), body: event })).status, 200);
    await h.until(() => slack.calls("chat.postMessage").some((c) => c.body.blocks), { what: "the buttons" });
    const prompt = slack.calls("chat.postMessage").find((c) => c.body.blocks);
    assert.equal(prompt.body.channel, OWNER, "posted to the owner (their DM with the app)");
    const actions = prompt.body.blocks.find((b) => b.type === "actions");
    const [yes] = actions.elements;
    assert.equal(yes.style, "primary");
    const ts = prompt.answer.ts;
    // Unsigned: refused before anything is read.
    const unsigned = await h.fetch("/slack/main", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: tapBody(OWNER, yes, DM, ts) });
    assert.equal(unsigned.status, 401);
    // Signed, but by someone else: nothing happens.
    assert.equal((await tap(tapBody("U0STRANGER", yes, DM, ts))).status, 200);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(slack.state.responses.length, 0);
    assert.equal(site.hits.filter((p) => p === "/tonight").length, 0);
    // The owner's tap: the message is replaced through its response_url, the turn goes on.
    assert.equal((await tap(tapBody(OWNER, yes, DM, ts))).status, 200);
    await h.until(() => slack.state.responses.length === 1, { what: "the message replaced" });
    const replaced = slack.state.responses[0].body;
    assert.equal(replaced.replace_original, true);
    assert.match(replaced.text, /✅ Approved/);
    await h.until(() => slack.calls("chat.postMessage").some((c) => c.body.text === "Soup, tonight."), { what: "the answer" });
    assert.deepEqual(site.hits.filter((p) => p === "/tonight"), ["/tonight"]);
  });
});
