// Runs the built Worker (build/index.js + build/index_bg.wasm) in workerd
// through Miniflare, with real R2 and SQLite-backed Durable Objects, wired to
// the stand-ins. One instance serves a whole test file.
import { Log, LogLevel, Miniflare } from "miniflare";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLlm, startTelegram } from "./standins.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SECRET = "test-webhook-secret";
export const OWNER = 4242;
export const FRIEND = 777;
export const GROUP = -100123456;

/** The web console's static assets as wrangler.toml's [assets] serves them
 * (built by scripts/build-console.mjs into dist-console/). */
export const CONSOLE_ASSETS = {
  directory: path.join(ROOT, "dist-console"),
  assetConfig: { html_handling: "auto-trailing-slash", not_found_handling: "none" },
  routerConfig: { has_user_worker: true },
};

/**
 * Miniflare's log, with what its `send_email` binding stored noted: each
 * message the Worker sent (Miniflare's own binding checks it as Cloudflare
 * does, and writes it to a file whose path it logs).
 */
class MailLog extends Log {
  constructor(sent) {
    super(LogLevel.INFO);
    this.sent = sent;
  }
  log(message) {
    const file = message.includes("send_email binding called") && message.match(/(\S+\.eml)/);
    if (file) {
      this.sent.push({ file: file[1], raw: fs.readFileSync(file[1], "utf8") });
      return;
    }
    super.log(message);
  }
}

/** A header of a raw message (unfolded), or undefined. */
export function mailHeader(raw, name) {
  const head = raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ":"));
  return line?.slice(name.length + 1).trim();
}

/** `loader`: give the Worker a Worker Loader binding (`LOADER`, wrangler.toml's
 * optional `[[worker_loaders]]`), so the owner's session has `run_code`. */
export async function startHearth({ bindings = {}, persist, inspectorPort, assets = false, email, loader = false } = {}) {
  const telegram = await startTelegram();
  const llm = await startLlm();
  // Email: the handler's trigger (`/cdn-cgi/handler/email`, as `wrangler dev`
  // offers it) and Miniflare's own `send_email` binding, its sends captured.
  const mails = [];
  const emailOptions = email
    ? { unsafeTriggerHandlers: true, email: { send_email: [{ name: "SEND_EMAIL", ...(email === true ? {} : email) }] }, log: new MailLog(mails) }
    : {};
  // Bindings a restart changed (a deploy with new settings).
  let changed = {};
  const mfOptions = (extra = {}) => ({
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: path.join(ROOT, "build/index.js") },
      { type: "CompiledWasm", path: path.join(ROOT, "build/index_bg.wasm") },
    ],
    compatibilityDate: "2026-04-01",
    r2Buckets: ["BUCKET"],
    durableObjects: {
      SESSION: { className: "Session", useSQLite: true },
      AGENT: { className: "Agent", useSQLite: true },
      GATEWAY: { className: "Gateway", useSQLite: true },
    },
    bindings: {
      AGENTS: "main",
      LLM_PROVIDER: "anthropic",
      LLM_BASE_URL: llm.base,
      LLM_MODEL: "claude-test",
      LLM_API_KEY: "test-llm-key",
      TELEGRAM_API_BASE: telegram.base,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      OWNER_IDS: `telegram:${OWNER}`,
      ALLOW_FROM: `telegram:${FRIEND},telegram:${GROUP}`,
      RETRY_BASE_MS: "20",
      RETRY_MAX_MS: "200",
      // The daily reset (04:00 by default) runs on the real clock: a run that
      // crosses it would reset sessions mid-test. Tests that want it set it.
      RESET_DAILY_AT: "off",
      // A function gets the stand-ins, for settings that name their addresses.
      ...(typeof bindings === "function" ? bindings({ llm, telegram }) : bindings),
      ...changed,
    },
    cf: false,
    ...emailOptions,
    ...(inspectorPort ? { inspectorPort } : {}),
    ...(assets ? { assets: CONSOLE_ASSETS } : {}),
    ...(loader ? { workerLoaders: { LOADER: {} } } : {}),
    ...(persist ? { r2Persist: path.join(persist, "r2"), durableObjectsPersist: path.join(persist, "do") } : {}),
    ...extra,
  });
  let mf = new Miniflare(mfOptions());
  // The address workerd listens on (a browser's way in).
  let address = await mf.ready;
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
      mf = new Miniflare(mfOptions());
      address = await mf.ready;
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
