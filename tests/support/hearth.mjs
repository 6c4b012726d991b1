// Runs the built Worker (build/index.js + build/index_bg.wasm) in workerd
// through Miniflare, with real R2 and SQLite-backed Durable Objects, wired to
// the stand-ins. One instance serves a whole test file.
import { hearthMiniflare } from "./miniflare.mjs";
import { startLlm } from "./llm.mjs";
import { startTelegram } from "./telegram.mjs";

export { CONSOLE_ASSETS } from "./miniflare.mjs";
export const SECRET = "test-webhook-secret";
export const OWNER = 4242;
export const FRIEND = 777;
export const GROUP = -100123456;

/**
 * The settings every run against the stand-ins starts from: one agent, the
 * LLM and Telegram stand-ins as its peers, `OWNER` its owner, the daily
 * reset off (it runs on the real clock: a run that crossed 04:00 would reset
 * sessions mid-test; tests that want it set it).
 */
export function standinSettings({ llm, telegram }) {
  return {
    AGENTS: "main",
    LLM_PROVIDER: "anthropic",
    LLM_BASE_URL: llm.base,
    LLM_MODEL: "claude-test",
    LLM_API_KEY: "test-llm-key",
    TELEGRAM_API_BASE: telegram.base,
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_WEBHOOK_SECRET: SECRET,
    OWNER_IDS: `telegram:${OWNER}`,
    RESET_DAILY_AT: "off",
  };
}

/** A header of a raw message (unfolded), or undefined. */
export function mailHeader(raw, name) {
  const head = raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ":"));
  return line?.slice(name.length + 1).trim();
}

/** Hearth in workerd (tests/support/miniflare.mjs) with the Telegram and LLM stand-ins.
 * `bindings`: settings over the stand-ins' (a function gets the stand-ins, for settings
 * that name their addresses); `email`: the `send_email` binding (Miniflare's options, or
 * true) and the email trigger; `loader`: a Worker Loader binding (`LOADER`, wrangler.toml's
 * optional `[[worker_loaders]]`), so the owner's session has `run_code`; `assets`: the
 * console in front; `persist`: a folder for the storage, kept across `restart()`. */
export async function startHearth({ bindings = {}, persist, inspectorPort, assets = false, email, loader = false } = {}) {
  const telegram = await startTelegram();
  const llm = await startLlm();
  // Email: the handler's trigger (`/cdn-cgi/handler/email`, as `wrangler dev`
  // offers it) and Miniflare's own `send_email` binding, its sends captured.
  const mails = [];
  // Bindings a restart changed (a deploy with new settings).
  let changed = {};
  const boot = () =>
    hearthMiniflare({
      bindings: {
        ...standinSettings({ llm, telegram }),
        ALLOW_FROM: `telegram:${FRIEND},telegram:${GROUP}`,
        RETRY_BASE_MS: "20",
        RETRY_MAX_MS: "200",
        ...(typeof bindings === "function" ? bindings({ llm, telegram }) : bindings),
        ...changed,
      },
      persist,
      inspectorPort,
      assets,
      loader,
      email,
      mails,
    });
  // The address workerd listens on (a browser's way in).
  let { mf, address } = await boot();
  const h = {
    telegram,
    llm,
    get mf() {
      return mf;
    },
    /** http://127.0.0.1:{port}/ of the running workerd. */
    get address() {
      return address;
    },
    url: (p) => new URL(p, "http://hearth.test").toString(),
    async fetch(p, init) {
      return mf.dispatchFetch(new URL(p, "http://hearth.test").toString(), init);
    },
    async bucket() {
      return mf.getR2Bucket("BUCKET");
    },
    async putFile(key, text) {
      const b = await mf.getR2Bucket("BUCKET");
      await b.put(key, text);
    },
    /** POSTs an update to the Telegram webhook. */
    async sendUpdate(update, { secret = SECRET, agent = "main", raw } = {}) {
      return mf.dispatchFetch(`http://hearth.test/telegram/${agent}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(secret === null ? {} : { "X-Telegram-Bot-Api-Secret-Token": secret }) },
        body: raw ?? JSON.stringify(update),
      });
    },
    /** Delivers a raw email to the Worker's `email` handler, as Email Routing would. */
    async sendEmail(raw, { from, to }) {
      const url = `http://hearth.test/cdn-cgi/handler/email?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
      return mf.dispatchFetch(url, { method: "POST", body: raw });
    },
    /** The messages the Worker sent through `send_email`: `{file, raw}`. */
    mails,
    /** Waits until `predicate()` is truthy, polling. */
    async until(predicate, { timeoutMs = 10000, what = "condition" } = {}) {
      const start = Date.now();
      for (;;) {
        const v = await predicate();
        if (v) return v;
        if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async reset() {
      telegram.reset();
      llm.reset();
      mails.length = 0;
    },
    /** A session object's /status (history, open queue, usage), read directly. */
    async sessionStatus(sessionKey) {
      const ns = await mf.getDurableObjectNamespace("SESSION");
      const res = await ns.get(ns.idFromName(sessionKey)).fetch("https://session/status");
      return res.json();
    },
    /** Waits until the named sessions have no queued or running turn. */
    async settle(...sessionKeys) {
      for (const key of sessionKeys) {
        await h.until(async () => (await h.sessionStatus(key)).open === 0, { what: `${key} idle` });
      }
    },
    /** Disposes workerd and starts it again on the same persisted state;
     * waits for running turns first, so the restart tests persistence, not a race.
     * `bindings` changes settings, as a deploy would (they stay for later restarts);
     * `downMs`: how long the runtime stays down in between. */
    async restart({ settle = [], bindings: more = {}, downMs = 0 } = {}) {
      await h.settle(...settle);
      changed = { ...changed, ...more };
      await mf.dispose();
      if (downMs) await new Promise((r) => setTimeout(r, downMs));
      ({ mf, address } = await boot());
    },
    async close() {
      await mf.dispose();
      await telegram.close();
      await llm.close();
    },
  };
  return h;
}

let updateId = 1;
let messageId = 1;

/** A Telegram update as the Bot API sends it. */
export function tgUpdate({ from = OWNER, chat, text, entities, replyTo, edited = false, threadId, extra = {} } = {}) {
  const chatId = chat ?? from;
  const isGroup = chatId < 0;
  const message = {
    message_id: messageId++,
    from: { id: from, is_bot: false, first_name: from === OWNER ? "Olga" : "Pat", username: from === OWNER ? "olga" : undefined, language_code: "en" },
    chat: isGroup
      ? { id: chatId, title: "Test group", type: "supergroup", ...(threadId ? { is_forum: true } : {}) }
      : { id: chatId, first_name: "Olga", type: "private" },
    date: Math.floor(Date.now() / 1000),
    ...(text !== undefined ? { text } : {}),
    ...(entities ? { entities } : {}),
    ...(replyTo ? { reply_to_message: replyTo } : {}),
    ...(threadId ? { message_thread_id: threadId, is_topic_message: true } : {}),
    ...extra,
  };
  return { update_id: 100000 + updateId++, [edited ? "edited_message" : "message"]: message };
}

/** The system prompt text of an LLM request, either provider. */
export function systemText(req) {
  if (req.provider === "openai") return req.body.messages[0].content;
  return req.body.system.map((b) => b.text).join("\n");
}

/** The tool results an LLM request carries (Anthropic `tool_result` blocks), in order: `{text, isError}`. */
export function toolResults(req) {
  const out = [];
  for (const m of req.body.messages || []) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== "tool_result") continue;
      const text = typeof b.content === "string" ? b.content : (b.content || []).map((c) => c.text || "").join("");
      out.push({ text, isError: !!b.is_error });
    }
  }
  return out;
}

/**
 * Sends a Telegram update and waits for the bot's next message to `chat`;
 * returns the LLM requests that turn made.
 */
export async function telegramTurn(h, update, chat) {
  const sentTo = () => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).length;
  const before = sentTo();
  const first = h.llm.requests.length;
  const res = await h.sendUpdate(update);
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.until(() => sentTo() > before, { what: "reply" });
  return h.llm.requests.slice(first);
}
