// Local stand-ins for the services Hearth cannot reach in tests: the Telegram
// Bot API and the LLM providers (Anthropic Messages, OpenAI chat completions).
// They speak the real wire formats, including real error bodies, and record
// every request so tests can assert on what Hearth sent.
import { createHash } from "node:crypto";
import http from "node:http";
import { parseMultipart } from "./multipart.mjs";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Real Bot API error bodies for previews (tests/fixtures/real-world/SOURCES.md).
const PREVIEW_ERRORS = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/real-world/telegram-api/preview-errors.json"), "utf8"),
);

function listen(handler) {
  return new Promise((resolve) => {
    const server = http.createServer(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const raw = Buffer.concat(chunks);
      try {
        await handler(req, res, raw);
      } catch (e) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: String(e) }));
      }
    });
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/**
 * Error bodies as the Bot API sends them (core.telegram.org/bots/api#making-requests:
 * `ok`, `error_code`, `description`, and `parameters.retry_after` on flood control,
 * #responseparameters). The descriptions are Telegram's own wording.
 */
export const TG_ERRORS = {
  flood: (seconds) => ({ ok: false, error_code: 429, description: `Too Many Requests: retry after ${seconds}`, parameters: { retry_after: seconds } }),
  badGateway: { ok: false, error_code: 502, description: "Bad Gateway" },
  // Inline keyboards and callback queries (core.telegram.org/bots/api#inlinekeyboardbutton,
  // #answercallbackquery, #editmessagereplymarkup): the Bot API's own descriptions.
  buttonDataInvalid: { ok: false, error_code: 400, description: "Bad Request: BUTTON_DATA_INVALID" },
  queryTooOld: { ok: false, error_code: 400, description: "Bad Request: query is too old and response timeout expired or query ID is invalid" },
  messageToEditNotFound: { ok: false, error_code: 400, description: "Bad Request: message to edit not found" },
  notModified: {
    ok: false,
    error_code: 400,
    description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
  },
  blocked: { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" },
  chatNotFound: { ok: false, error_code: 400, description: "Bad Request: chat not found" },
};

/**
 * A Telegram Bot API stand-in. `failures` holds scripted answers per method;
 * `outage()` makes a method (optionally for one chat, optionally after some
 * more successes) fail until `recover()`.
 */
export async function startTelegram({ token = "123456:TEST-TOKEN", username = "hearth_bot" } = {}) {
  const botId = Number(token.split(":")[0]);
  const state = {
    token,
    botId,
    username,
    requests: [],
    failures: new Map(), // method -> [{status, body}]
    outages: [], // {method, chat, after, status, body}
    latencyMs: {}, // method -> ms it takes to answer
    fileBytes: new Map(), // file_id -> {bytes, path}
    nextMessageId: 1000,
    // Messages the bot has in each chat, by `${chat}:${message_id}`: their text and reply_markup
    // (edits and deletes follow them).
    messages: new Map(),
    // callback_query ids Telegram delivered and the bot has not answered yet.
    openQueries: new Set(),
    nextQueryId: 1,
  };
  /** A reply_markup's problem (as the Bot API words it), or null. */
  const markupProblem = (markup) => {
    if (markup === undefined) return null;
    const rows = markup?.inline_keyboard;
    if (!Array.isArray(rows) || rows.some((r) => !Array.isArray(r))) {
      return "Bad Request: field \"inline_keyboard\" of the InlineKeyboardMarkup should be an Array of Arrays";
    }
    for (const b of rows.flat()) {
      if (typeof b?.text !== "string" || b.text.length === 0) return "Bad Request: text buttons are unallowed in the inline keyboard";
      const kinds = ["callback_data", "url", "switch_inline_query", "switch_inline_query_current_chat", "web_app", "login_url", "pay", "callback_game", "copy_text"];
      if (kinds.filter((k) => k in b).length !== 1) return "Bad Request: text buttons are unallowed in the inline keyboard";
      if ("callback_data" in b) {
        const n = Buffer.byteLength(String(b.callback_data));
        if (typeof b.callback_data !== "string" || n < 1 || n > 64) return TG_ERRORS.buttonDataInvalid.description;
      }
    }
    return null;
  };
  // Wakes `untilSent` the moment a sendMessage arrives (polling would add up to
  // its interval to every timing taken with it).
  const waiters = new Set();
  const sentCount = () => state.requests.filter((r) => r.method === "sendMessage").length;
  const record = (entry) => {
    state.requests.push(entry);
    if (!waiters.size) return;
    const n = sentCount();
    for (const w of waiters) if (n >= w.n) w.done();
  };
  const server = await listen(async (req, res, raw) => {
    const url = new URL(req.url, "http://x");
    const fileMatch = url.pathname.match(/^\/file\/bot([^/]+)\/(.+)$/);
    if (fileMatch) {
      const entry = [...state.fileBytes.values()].find((f) => f.path === fileMatch[2]);
      record({ method: "file", path: fileMatch[2], at: Date.now() });
      if (!entry) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return res.end(entry.bytes);
    }
    const m = url.pathname.match(/^\/bot([^/]+)\/(\w+)$/);
    if (!m) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    const [, tok, method] = m;
    let body = {};
    let files = {};
    if (raw.length && /^multipart\/form-data/i.test(req.headers["content-type"] ?? "")) {
      const form = parseMultipart(req.headers["content-type"], raw);
      if (!form) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: can't parse multipart" });
      body = form.fields;
      files = form.files;
    } else if (raw.length) {
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: can't parse JSON" });
      }
    }
    const entry = { method, body, files, at: Date.now() };
    record(entry);
    // Every answer to a method call is recorded with its status.
    const answer = res.writeHead.bind(res);
    res.writeHead = (status, ...rest) => {
      entry.status = status;
      return answer(status, ...rest);
    };
    if (tok !== state.token) {
      return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    }
    const outage = state.outages.find((o) => o.method === method && (o.chat === undefined || Number(body.chat_id) === o.chat));
    if (outage && outage.after > 0) {
      outage.after--;
    } else if (outage) {
      return sendJson(res, outage.status, outage.body);
    }
    // A method that takes a while, as the real API's round trip does (ms).
    if (state.latencyMs[method]) await sleep(state.latencyMs[method]);
    const scripted = state.failures.get(method);
    if (scripted && scripted.length) {
      const f = scripted.shift();
      return sendJson(res, f.status, f.body);
    }
    switch (method) {
      case "getMe":
        return sendJson(res, 200, {
          ok: true,
          result: { id: botId, is_bot: true, first_name: "Hearth", username, can_join_groups: true },
        });
      case "sendMessage": {
        if (!body.text || String(body.text).length === 0) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message text is empty" });
        }
        if ([...String(body.text)].length > 4096 && !body.parse_mode) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message is too long" });
        }
        const markup = markupProblem(body.reply_markup);
        if (markup) return sendJson(res, 400, { ok: false, error_code: 400, description: markup });
        const message_id = state.nextMessageId++;
        state.messages.set(`${Number(body.chat_id)}:${message_id}`, { text: String(body.text), reply_markup: body.reply_markup });
        return sendJson(res, 200, {
          ok: true,
          result: {
            message_id,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(body.chat_id), type: Number(body.chat_id) < 0 ? "supergroup" : "private" },
            from: { id: botId, is_bot: true, first_name: "Hearth", username },
            text: body.text,
            ...(body.reply_markup ? { reply_markup: body.reply_markup } : {}),
          },
        });
      }
      case "answerCallbackQuery": {
        // Each query is answered once, while it is fresh; the text is 0-200 characters.
        if (!state.openQueries.has(String(body.callback_query_id))) return sendJson(res, 400, TG_ERRORS.queryTooOld);
        if (body.text !== undefined && [...String(body.text)].length > 200) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: MESSAGE_TOO_LONG" });
        }
        state.openQueries.delete(String(body.callback_query_id));
        return sendJson(res, 200, { ok: true, result: true });
      }
      case "editMessageReplyMarkup": {
        const key = `${Number(body.chat_id)}:${Number(body.message_id)}`;
        const msg = state.messages.get(key);
        if (!msg) return sendJson(res, 400, TG_ERRORS.messageToEditNotFound);
        const markup = markupProblem(body.reply_markup);
        if (markup) return sendJson(res, 400, { ok: false, error_code: 400, description: markup });
        if (JSON.stringify(msg.reply_markup ?? null) === JSON.stringify(body.reply_markup ?? null)) {
          return sendJson(res, 400, TG_ERRORS.notModified);
        }
        msg.reply_markup = body.reply_markup;
        return sendJson(res, 200, {
          ok: true,
          result: { message_id: Number(body.message_id), chat: { id: Number(body.chat_id), type: "private" }, date: Math.floor(Date.now() / 1000), text: msg.text, ...(body.reply_markup ? { reply_markup: body.reply_markup } : {}) },
        });
      }
      case "sendVoice": {
        // Bot API: `voice` is an OGG file encoded with OPUS (uploaded as multipart).
        const voice = files.voice;
        if (!voice) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: there is no voice in the request" });
        if (!body.chat_id) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: chat_id is empty" });
        return sendJson(res, 200, {
          ok: true,
          result: {
            message_id: state.nextMessageId++,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(body.chat_id), type: Number(body.chat_id) < 0 ? "supergroup" : "private" },
            from: { id: botId, is_bot: true, first_name: "Hearth", username },
            voice: { file_id: "voice" + state.nextMessageId, file_unique_id: "uv" + state.nextMessageId, duration: 1, mime_type: "audio/ogg", file_size: voice.bytes.length },
          },
        });
      }
      case "sendChatAction":
        return sendJson(res, 200, { ok: true, result: true });
      case "sendMessageDraft": {
        // Bot API 9.5: private chats only; draft_id non-zero; 1-4096 characters.
        if (Number(body.chat_id) <= 0) return sendJson(res, 400, PREVIEW_ERRORS.draft_peer_invalid);
        if (!Number.isInteger(body.draft_id) || body.draft_id === 0) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: draft_id must be non-zero" });
        }
        if (typeof body.text !== "string" || body.text.length === 0) return sendJson(res, 400, PREVIEW_ERRORS.draft_text_empty);
        if ([...body.text].length > 4096) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message is too long" });
        return sendJson(res, 200, { ok: true, result: true });
      }
      case "editMessageText": {
        const key = `${Number(body.chat_id)}:${Number(body.message_id)}`;
        const msg = state.messages.get(key);
        if (!msg) return sendJson(res, 400, PREVIEW_ERRORS.edit_not_found);
        if (!body.text) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message text is empty" });
        if (msg.text === String(body.text)) return sendJson(res, 400, PREVIEW_ERRORS.edit_not_modified);
        msg.text = String(body.text);
        return sendJson(res, 200, {
          ok: true,
          result: { message_id: Number(body.message_id), date: Math.floor(Date.now() / 1000), edit_date: Math.floor(Date.now() / 1000), chat: { id: Number(body.chat_id) }, text: body.text },
        });
      }
      case "deleteMessage": {
        const key = `${Number(body.chat_id)}:${Number(body.message_id)}`;
        if (!state.messages.delete(key)) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message to delete not found" });
        return sendJson(res, 200, { ok: true, result: true });
      }
      case "getFile": {
        const f = state.fileBytes.get(body.file_id);
        if (!f) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid file_id" });
        return sendJson(res, 200, {
          ok: true,
          result: { file_id: body.file_id, file_unique_id: "u" + body.file_id, file_size: f.bytes.length, file_path: f.path },
        });
      }
      default:
        return sendJson(res, 200, { ok: true, result: true });
    }
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    ...state,
    state,
    base,
    /** Every sendMessage request, answered or not. */
    sent: () => state.requests.filter((r) => r.method === "sendMessage"),
    /** Resolves as soon as `n` sendMessage calls in all have arrived. */
    untilSent: (n, { timeoutMs = 10000 } = {}) =>
      new Promise((resolve, reject) => {
        if (sentCount() >= n) return resolve();
        const w = { n };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`timed out waiting for sendMessage #${n}`));
        }, timeoutMs);
        w.done = () => {
          clearTimeout(timer);
          waiters.delete(w);
          resolve();
        };
        waiters.add(w);
      }),
    /** A message the bot sent (text, reply_markup as it is now), by chat and id. */
    message: (chat, messageId) => state.messages.get(`${Number(chat)}:${Number(messageId)}`),
    /**
     * The update Telegram delivers when `from` taps the button with `data` on
     * the bot's message `messageId` in `chat` (Bot API CallbackQuery); its id
     * becomes answerable once.
     */
    tapUpdate: ({ from, chat, messageId, data, updateId }) => {
      const id = String(8_000_000_000_000_000_000n + BigInt(state.nextQueryId++));
      state.openQueries.add(id);
      const msg = state.messages.get(`${Number(chat)}:${Number(messageId)}`);
      return {
        update_id: updateId,
        callback_query: {
          id,
          from: { id: from, is_bot: false, first_name: "Olga", language_code: "en" },
          message: {
            message_id: messageId,
            from: { id: botId, is_bot: true, first_name: "Hearth", username },
            chat: { id: Number(chat), first_name: "Olga", type: "private" },
            date: Math.floor(Date.now() / 1000),
            text: msg?.text ?? "",
            ...(msg?.reply_markup ? { reply_markup: msg.reply_markup } : {}),
          },
          chat_instance: "-4361122334455667788",
          data,
        },
      };
    },
    /** The sendMessage requests Telegram accepted (200). */
    delivered: () => state.requests.filter((r) => r.method === "sendMessage" && r.status === 200),
    calls: (method) => state.requests.filter((r) => r.method === method),
    fail: (method, status, body) => {
      if (!state.failures.has(method)) state.failures.set(method, []);
      state.failures.get(method).push({ status, body });
    },
    /** The texts the chat shows now (sent, edited, not deleted). */
    shown: (chatId) =>
      [...state.messages.entries()].filter(([k]) => k.startsWith(`${chatId}:`)).map(([, msg]) => msg.text),
    /** `method` (to `chat`, if given) fails with `status`/`body` until recover(), after `after` more successes. */
    outage: ({ method = "sendMessage", chat, after = 0, status = 502, body = TG_ERRORS.badGateway } = {}) => {
      state.outages.push({ method, chat, after, status, body });
    },
    recover: () => {
      state.outages.length = 0;
    },
    reset: () => {
      state.requests.length = 0;
      state.failures.clear();
      state.outages.length = 0;
      state.messages.clear();
      state.latencyMs = {};
    },
    close: () => new Promise((r) => server.close(r)),
  };
}


function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    if (typeof m.content === "string") return m.content;
    const texts = (m.content || []).filter((b) => b.type === "text").map((b) => b.text);
    if (texts.length) return texts[texts.length - 1];
  }
  return "";
}

/** Tokens of a text, as the stand-in counts them: 4 characters each. */
const tokensOf = (s) => Math.ceil(s.length / 4);

/** Anthropic's tokens around the blocks (role markers), never cached. */
const FRAMING_TOKENS = 4;

/** A breakpoint's lifetime in ms: `ttl` "1h" or "5m" (the default). */
const ONE_HOUR_MS = 60 * 60_000;
const breakpointTtl = (block, fiveMinutesMs) => (block?.cache_control?.ttl === "1h" ? ONE_HOUR_MS : fiveMinutesMs);

/** A content block without its cache marker, as the prefix match sees it. */
function plainJson(block) {
  if (block && typeof block === "object" && "cache_control" in block) {
    const { cache_control, ...rest } = block;
    return JSON.stringify(rest);
  }
  return JSON.stringify(block);
}

/**
 * Prompt caching as the providers do it, for the stand-in's usage numbers.
 *
 * Anthropic (https://docs.claude.com/en/docs/build-with-claude/prompt-caching):
 * the prefix is tools, then system, then messages, block by block. A block
 * with `cache_control` is a breakpoint: the prefix ending there is written
 * to the cache (when it has at least `minTokens`), and a request reads the
 * longest cached prefix that ends at a block within 20 blocks before one of
 * its breakpoints. Tokens from there to the last breakpoint are written
 * (`cache_creation_input_tokens`), the rest are `input_tokens`.
 *
 * Lifetimes: a breakpoint's `cache_control.ttl` is "5m" (the default) or
 * "1h". A hit refreshes the entry for its own lifetime. Writes are billed
 * by Anthropic's rule for mixed lifetimes ("Mixing different TTLs"): A is
 * the prefix read, B the end of the last 1-hour breakpoint after A, C the
 * last breakpoint; B − A tokens are 1-hour writes, C − B 5-minute writes,
 * reported apart in `cache_creation` (`ephemeral_1h_input_tokens`,
 * `ephemeral_5m_input_tokens`). A request without the
 * `extended-cache-ttl-2025-04-11` beta flag gets 5-minute entries for its
 * 1-hour breakpoints, without an error (as reported for the real API:
 * griffinwork40/agent-afk#757).
 *
 * OpenAI (https://platform.openai.com/docs/guides/prompt-caching): no
 * markers; a prompt of 1024 tokens or more reads the longest prefix it
 * shares with a recent request, in steps of 128 tokens (`cached_tokens`,
 * part of `prompt_tokens`); nothing is billed as a write.
 *
 * Entries live `ttlMs` (5 minutes, refreshed by each hit) unless asked for
 * an hour. Anthropic bills a few framing tokens outside any block as input
 * (`FRAMING_TOKENS`).
 */
export function promptCache({ ttlMs = 5 * 60_000, minTokens = 1024 } = {}) {
  const anthropic = new Map(); // prefix hash -> {expires, lifeMs}
  const openai = []; // recent prompts: {chunks, expires}
  const alive = (expires, now) => expires > now;
  return {
    clear() {
      anthropic.clear();
      openai.length = 0;
    },
    anthropic(body, now = Date.now(), { extendedTtl = true } = {}) {
      const blocks = [];
      const life = (b) => (extendedTtl ? breakpointTtl(b, ttlMs) : ttlMs);
      for (const t of body.tools ?? []) blocks.push({ json: plainJson(t), bp: !!t?.cache_control, life: life(t) });
      const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : body.system ?? [];
      for (const s of system) blocks.push({ json: plainJson(s), bp: !!s?.cache_control, life: life(s) });
      for (const m of body.messages ?? []) {
        const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content ?? [];
        content.forEach((b, j) => blocks.push({ json: (j === 0 ? m.role + ":" : "") + plainJson(b), bp: !!b?.cache_control, life: life(b) }));
      }
      // Prefix identity and size at each block boundary.
      let h = createHash("sha256").update(String(body.model)).digest("hex");
      let total = 0;
      const hashes = [];
      const cum = [];
      for (const b of blocks) {
        h = createHash("sha256").update(h).update(b.json).digest("hex");
        total += tokensOf(b.json);
        hashes.push(h);
        cum.push(total);
      }
      const breakpoints = blocks.flatMap((b, i) => (b.bp ? [i] : []));
      let read = 0;
      for (const bp of breakpoints) {
        for (let j = bp; j >= 0 && j >= bp - 19; j--) {
          const entry = anthropic.get(hashes[j]);
          if (entry !== undefined && alive(entry.expires, now)) {
            if (cum[j] > read) read = cum[j];
            entry.expires = now + entry.lifeMs;
            break;
          }
        }
      }
      const last = breakpoints.length ? breakpoints[breakpoints.length - 1] : -1;
      const cacheable = last >= 0 && cum[last] >= minTokens;
      // B: the end of the last 1-hour breakpoint past what was read.
      let hourEnd = read;
      for (const bp of breakpoints) if (blocks[bp].life > ttlMs && cum[bp] >= minTokens && cum[bp] > hourEnd) hourEnd = cum[bp];
      const write1h = hourEnd - read;
      const write5m = cacheable && cum[last] > hourEnd ? cum[last] - hourEnd : 0;
      for (const bp of breakpoints) {
        if (cum[bp] < minTokens) continue;
        const had = anthropic.get(hashes[bp]);
        const lifeMs = had && alive(had.expires, now) ? Math.max(had.lifeMs, blocks[bp].life) : blocks[bp].life;
        anthropic.set(hashes[bp], { expires: now + lifeMs, lifeMs });
      }
      const write = write1h + write5m;
      return { input: total - read - write + FRAMING_TOKENS, cacheRead: read, cacheWrite: write, cacheWrite1h: write1h, cacheWrite5m: write5m, prompt: total + FRAMING_TOKENS };
    },
    openai(body, now = Date.now()) {
      const chunks = [String(body.model), JSON.stringify(body.tools ?? []), ...(body.messages ?? []).map((m) => JSON.stringify(m))];
      const prompt = chunks.reduce((n, c) => n + c.length, 0);
      let best = 0;
      for (const prev of openai) {
        if (!alive(prev.expires, now)) continue;
        let chars = 0;
        let i = 0;
        while (i < chunks.length && i < prev.chunks.length && chunks[i] === prev.chunks[i]) chars += chunks[i++].length;
        if (i < chunks.length && i < prev.chunks.length) {
          const a = chunks[i];
          const b = prev.chunks[i];
          let k = 0;
          while (k < a.length && k < b.length && a.charCodeAt(k) === b.charCodeAt(k)) k++;
          chars += k;
        }
        if (chars > best) best = chars;
      }
      const total = Math.ceil(prompt / 4);
      const shared = Math.floor(best / 4);
      const cached = total >= minTokens && shared >= minTokens ? Math.min(total, Math.floor(shared / 128) * 128) : 0;
      openai.unshift({ chunks, expires: now + ttlMs });
      if (openai.length > 16) openai.length = 16;
      return { input: total - cached, cacheRead: cached, cacheWrite: 0, prompt: total };
    },
  };
}

/**
 * An LLM stand-in serving both Anthropic (`/v1/messages`) and OpenAI-compatible
 * (`/v1/chat/completions`) requests. By default it answers "echo: <last user
 * text>"; `script` queues answers: {status, body, headers, delayMs},
 * {text} / {toolCall: {name, input, id}} (`id` overrides the generated one,
 * e.g. "" as some OpenAI-compatible servers send), or {raw: body}: a whole
 * 200 response body as a provider sent it (the real-world fixtures), or
 * (Anthropic) {content: [blocks], stopReason}: a reply with these blocks.
 * Like the real APIs, it refuses (400, recorded as `invalid`) a body they
 * would refuse: see messagesProblem and chatCompletionsProblem.
 *
 * A request with `"stream": true` is answered as the provider streams it
 * (see streamAnswer): the text in pieces (`pieces: [...]`, else word by word),
 * `pieceDelayMs` apart; `breakAfter: n` drops the connection after n pieces,
 * `errorAfter: n` ends with Anthropic's in-stream `error` event (overloaded)
 * after n pieces; `sse: "..."` sends a recorded transcript as it is. Each
 * request records `firstPieceAt` and `lastByteAt` (ms, for the bench), and
 * `aborted` (ms) when the client hung up before the answer's end.
 *
 * Usage is computed as the providers would report it ([promptCache]: the
 * cache reads and writes of the request's prefix, 4 characters a token),
 * recorded on each request as `usage` ({input, output, cacheRead,
 * cacheWrite}) and, for Anthropic, `cacheCreation` (the writes by lifetime,
 * as the API's `usage.cache_creation`); a step's `usage` (the provider's own
 * usage object) replaces it.
 *
 * The cache's clock is the wall clock, or the time a test sets with
 * `setTime(ms)` (`null`: the wall clock again): a test that fires the cron
 * trigger at 10:00 and 10:30 lets the cache see 30 minutes pass.
 */
export async function startLlm() {
  const cache = promptCache();
  const state = { requests: [], script: [], inFlight: 0, maxInFlight: 0, defaultDelayMs: 0, transcriptions: [], transcript: "stand-in transcript", speech: [], speechFailure: 0, time: null };
  const now = () => state.time ?? Date.now();
  const server = await listen(async (req, res, raw) => {
    const url = new URL(req.url, "http://x");
    // OpenAI-compatible speech to text: a multipart upload (`file`, `model`), recorded raw.
    if (url.pathname.endsWith("/audio/transcriptions")) {
      state.transcriptions.push({ headers: req.headers, raw, at: Date.now() });
      return sendJson(res, 200, { text: state.transcript });
    }
    // OpenAI-compatible text to speech: JSON in, audio bytes out (Ogg/Opus for "opus").
    if (url.pathname.endsWith("/audio/speech")) {
      const b = JSON.parse(raw.toString("utf8") || "{}");
      state.speech.push({ headers: req.headers, body: b, at: Date.now() });
      if (state.speechFailure) return sendJson(res, state.speechFailure, { error: { message: "The server is overloaded", type: "server_error" } });
      if (!b.model || !b.voice || typeof b.input !== "string" || !b.input) {
        return sendJson(res, 400, { error: { message: "Missing required parameter", type: "invalid_request_error" } });
      }
      if (b.input.length > 4096) return sendJson(res, 400, { error: { message: "string too long", type: "invalid_request_error" } });
      const ogg = Buffer.concat([Buffer.from("OggS\0\x02"), Buffer.from(b.input.slice(0, 64))]);
      const mp3 = Buffer.concat([Buffer.from("ID3\x04"), Buffer.from(b.input.slice(0, 64))]);
      res.writeHead(200, { "content-type": b.response_format === "opus" ? "audio/ogg" : "audio/mpeg" });
      return res.end(b.response_format === "opus" ? ogg : mp3);
    }
    const body = raw.length ? JSON.parse(raw.toString("utf8")) : {};
    const provider = url.pathname.endsWith("/chat/completions") ? "openai" : url.pathname.endsWith("/messages") ? "anthropic" : "unknown";
    const entry = { provider, path: url.pathname, headers: req.headers, body, raw: raw.toString("utf8"), start: Date.now() };
    state.requests.push(entry);
    // Like the real APIs: a body they would refuse is a 400 with their error
    // body, recorded.
    const invalid = provider === "openai" ? chatCompletionsProblem(body) : provider === "anthropic" ? messagesProblem(body) ?? cacheControlProblem(body) ?? serverToolProblem(body) : null;
    if (invalid) {
      entry.invalid = typeof invalid === "string" ? invalid : invalid.error.message;
      entry.end = Date.now();
      if (provider === "anthropic") {
        return sendJson(res, 400, { type: "error", error: { type: "invalid_request_error", message: invalid } });
      }
      return sendJson(res, 400, typeof invalid === "string" ? { error: { message: invalid, type: "invalid_request_error", param: null, code: null } } : invalid);
    }
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    try {
      // A responder answers by content (e.g. compaction requests); else the script.
      const step = (state.responder && state.responder(body, provider)) || state.script.shift() || {};
      const delay = step.delayMs ?? state.defaultDelayMs;
      if (delay) await sleep(delay);
      // A step may hold its answer until the test lets it go (something happens meanwhile).
      if (step.gate) await step.gate;
      if (step.status && step.status !== 200) {
        return sendJson(res, step.status, step.body ?? errorBody(provider, step.status), step.headers || {});
      }
      if (step.raw) return sendJson(res, 200, step.raw);
      const messages = provider === "openai" ? body.messages : body.messages;
      const text = step.text ?? `echo: ${lastUserText(messages || [])}`;
      const extendedTtl = String(req.headers["anthropic-beta"] ?? "").split(",").map((b) => b.trim()).includes(EXTENDED_CACHE_TTL_BETA);
      const prompt = provider === "openai" ? cache.openai(body, now()) : cache.anthropic(body, now(), { extendedTtl });
      const output = Math.max(1, tokensOf(step.toolCall ? JSON.stringify(step.toolCall) : text));
      entry.usage = { input: prompt.input, output, cacheRead: prompt.cacheRead, cacheWrite: prompt.cacheWrite };
      if (provider === "anthropic") entry.cacheCreation = { ephemeral_5m_input_tokens: prompt.cacheWrite5m, ephemeral_1h_input_tokens: prompt.cacheWrite1h };
      if (body.stream === true) return await streamAnswer(res, provider, body, step, text, entry, { prompt, output });
      if (provider === "openai") {
        const message = step.toolCall
          ? { role: "assistant", content: null, tool_calls: [{ id: step.toolCall.id ?? "call_" + state.requests.length, type: "function", function: { name: step.toolCall.name, arguments: JSON.stringify(step.toolCall.input) } }] }
          : { role: "assistant", content: text };
        const usage = step.usage ?? {
          prompt_tokens: prompt.prompt,
          completion_tokens: output,
          total_tokens: prompt.prompt + output,
          prompt_tokens_details: { cached_tokens: prompt.cacheRead },
        };
        if (step.usage) entry.usage = { input: usage.prompt_tokens - (usage.prompt_tokens_details?.cached_tokens ?? 0), output: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0, cacheWrite: 0 };
        return sendJson(res, 200, {
          id: "chatcmpl-" + state.requests.length,
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, message, finish_reason: step.toolCall ? "tool_calls" : "stop" }],
          usage,
        });
      }
      if (step.usage) entry.usage = { input: step.usage.input_tokens ?? 0, output: step.usage.output_tokens ?? 0, cacheRead: step.usage.cache_read_input_tokens ?? 0, cacheWrite: step.usage.cache_creation_input_tokens ?? 0 };
      if (step.usage) entry.cacheCreation = step.usage.cache_creation;
      const content = step.content ?? (step.toolCall
        ? [{ type: "tool_use", id: step.toolCall.id ?? "toolu_" + state.requests.length, name: step.toolCall.name, input: step.toolCall.input }]
        : [{ type: "text", text }]);
      return sendJson(res, 200, {
        id: "msg_" + state.requests.length,
        type: "message",
        role: "assistant",
        model: body.model,
        content,
        stop_reason: step.stopReason ?? (step.toolCall ? "tool_use" : "end_turn"),
        stop_sequence: null,
        usage: step.usage ?? {
          input_tokens: prompt.input,
          cache_creation_input_tokens: prompt.cacheWrite,
          cache_read_input_tokens: prompt.cacheRead,
          cache_creation: entry.cacheCreation,
          output_tokens: output,
          service_tier: "standard",
        },
      });
    } finally {
      entry.end = Date.now();
      state.inFlight--;
    }
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    state,
    base,
    requests: state.requests,
    push: (...steps) => state.script.push(...steps),
    cache,
    /** The cache's clock: `ms` from now on (`null`: the wall clock). */
    setTime: (ms) => {
      state.time = ms;
    },
    reset: () => {
      cache.clear();
      state.requests.length = 0;
      state.script.length = 0;
      state.transcriptions.length = 0;
      state.speech.length = 0;
      state.speechFailure = 0;
      state.maxInFlight = 0;
      state.defaultDelayMs = 0;
      state.responder = null;
      state.time = null;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/** OpenAI's models that refuse `max_tokens` (gpt-5.x, the o-series). */
export const REFUSES_MAX_TOKENS = /^(gpt-5|o\d)/i;

/**
 * What OpenAI would reject in a chat-completions body (the rules Hearth can
 * break), or null: roles, content shapes, image parts as URLs, `null`
 * content only beside tool calls, arguments as JSON strings, tool call ids
 * and names not empty, every tool call answered by a `tool` message before
 * the conversation goes on, and `max_tokens` for the models that refuse it.
 * A string is the message of an invalid_request_error; an object is the
 * whole error body (real ones, tests/fixtures/real-world/llm/openai/).
 */
export function chatCompletionsProblem(body) {
  if (typeof body.model !== "string" || !body.model) return "you must provide a model parameter";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages must be a non-empty array";
  if (body.max_tokens !== undefined && !Number.isInteger(body.max_tokens)) return "max_tokens must be an integer";
  if (body.max_completion_tokens !== undefined && !Number.isInteger(body.max_completion_tokens)) return "max_completion_tokens must be an integer";
  if (body.stream_options !== undefined && body.stream !== true) {
    return { error: { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", type: "invalid_request_error", param: "stream_options", code: null } };
  }
  if (body.max_tokens !== undefined && REFUSES_MAX_TOKENS.test(body.model.split("/").pop())) {
    // error-400-max-tokens-unsupported.json, verbatim.
    return {
      error: {
        message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        type: "invalid_request_error",
        param: "max_tokens",
        code: "unsupported_parameter",
      },
    };
  }
  // OpenAI's wording for an empty string where one is required
  // (error-400-empty-function-name.json).
  const empty = (path) => `Invalid '${path}': empty string. Expected a string with minimum length 1, but got an empty string instead.`;
  const part = (p, i) => {
    if (p?.type === "text") return typeof p.text === "string" ? null : `messages[${i}]: text part without text`;
    if (p?.type === "image_url") {
      const u = p.image_url?.url;
      return typeof u === "string" && /^(data:image\/[a-z+.-]+;base64,|https?:\/\/)/.test(u) ? null : `messages[${i}]: invalid image_url`;
    }
    return `messages[${i}]: unknown content part ${JSON.stringify(p?.type)}`;
  };
  let pending = []; // tool_call ids awaiting their tool message
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== "tool" && pending.length) return `messages[${i}]: tool_calls ${pending.join(",")} have no tool message`;
    switch (m.role) {
      case "system":
      case "developer":
      case "user":
        if (typeof m.content === "string") break;
        if (!Array.isArray(m.content) || m.content.length === 0) return `messages[${i}].content must be a string or parts`;
        if (m.role !== "user" && m.content.some((p) => p.type !== "text")) return `messages[${i}]: only text parts allowed`;
        for (const p of m.content) {
          const bad = part(p, i);
          if (bad) return bad;
        }
        break;
      case "assistant": {
        const calls = m.tool_calls ?? [];
        if (m.content === null || m.content === undefined) {
          if (!calls.length) return `messages[${i}]: assistant content is required unless tool_calls is given`;
        } else if (typeof m.content !== "string") return `messages[${i}].content must be a string`;
        for (const [k, c] of calls.entries()) {
          if (typeof c.id !== "string" || c.type !== "function" || typeof c.function?.name !== "string") return `messages[${i}]: malformed tool call`;
          if (c.id === "") return empty(`messages[${i}].tool_calls[${k}].id`);
          if (c.function.name === "") return empty(`messages[${i}].tool_calls[${k}].function.name`);
          if (typeof c.function.arguments !== "string") return `messages[${i}]: arguments must be a JSON string`;
          try {
            JSON.parse(c.function.arguments);
          } catch {
            return `messages[${i}]: arguments are not JSON`;
          }
        }
        pending = calls.map((c) => c.id);
        break;
      }
      case "tool":
        if (m.tool_call_id === "") return empty(`messages[${i}].tool_call_id`);
        if (!pending.includes(m.tool_call_id)) return `messages[${i}]: tool message does not answer a preceding tool call`;
        if (typeof m.content !== "string") return `messages[${i}]: tool content must be a string`;
        pending = pending.filter((id) => id !== m.tool_call_id);
        break;
      default:
        return `messages[${i}]: invalid role ${JSON.stringify(m.role)}`;
    }
  }
  if (pending.length) return `tool_calls ${pending.join(",")} have no tool message`;
  for (const t of body.tools ?? []) {
    if (t.type !== "function" || typeof t.function?.name !== "string" || typeof t.function?.parameters !== "object") return "malformed tool definition";
  }
  return null;
}

/** The media type bytes really are, for the types the providers decode. */
function sniffImage(bytes) {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (bytes.subarray(0, 4).toString("latin1") === "GIF8") return "image/gif";
  if (bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP") return "image/webp";
  return null;
}

/**
 * What Anthropic's Messages API would refuse in a body (the rules Hearth can
 * break), or null. The messages are the API's own, verbatim where a real one
 * is known (tests/fixtures/real-world/llm/anthropic/error-400-*.json): empty
 * and whitespace-only text blocks, messages without content, tool_use ids
 * outside the pattern, inputs that are not objects, a tool_use without its
 * tool_result in the next message and a tool_result without its tool_use in
 * the previous one, image bytes that are no image or not the declared type.
 */
export function messagesProblem(body) {
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  if (!Number.isInteger(body.max_tokens)) return "max_tokens: Field required";
  if (!Array.isArray(body.messages)) return "messages: Field required";
  let open = null; // {index, ids}: tool_use ids the next message must answer
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== "user" && m.role !== "assistant") return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks)) return `messages.${i}.content: Input should be a valid list`;
    const finalAssistant = m.role === "assistant" && i === body.messages.length - 1;
    if (blocks.length === 0 && !finalAssistant) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    const answers = m.role === "user" ? blocks.filter((b) => b?.type === "tool_result").map((b) => b.tool_use_id) : [];
    if (open) {
      const missing = open.ids.filter((id) => !answers.includes(id));
      if (missing.length) return `messages.${open.index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    const answerable = open?.ids ?? [];
    open = null;
    const ids = [];
    for (const [j, b] of blocks.entries()) {
      switch (b?.type) {
        case "text":
          if (typeof b.text !== "string") return `messages.${i}.content.${j}.text.text: Field required`;
          if (b.text === "") return "messages: text content blocks must be non-empty";
          if (!b.text.trim()) return "messages: text content blocks must contain non-whitespace text";
          break;
        case "image": {
          const src = b.source ?? {};
          if (src.type !== "base64") break;
          const kind = sniffImage(Buffer.from(String(src.data ?? ""), "base64"));
          if (!kind) return "Could not process image";
          if (kind !== src.media_type) return `messages.${i}.content.${j}.image.source.base64.data: Image does not match the provided media type ${src.media_type}`;
          break;
        }
        case "tool_use":
          if (typeof b.id !== "string" || !/^[a-zA-Z0-9_-]+$/.test(b.id)) return `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
          if (b.input === null || typeof b.input !== "object" || Array.isArray(b.input)) return `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`;
          ids.push(b.id);
          break;
        case "tool_result":
          if (!answerable.includes(b.tool_use_id)) return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          break;
        default:
          break;
      }
    }
    if (ids.length) open = { index: i, ids };
  }
  if (open) return `messages.${open.index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${open.ids.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  return null;
}

/** The `anthropic-beta` flag the 1-hour cache came with (see promptCache). */
export const EXTENDED_CACHE_TTL_BETA = "extended-cache-ttl-2025-04-11";

/**
 * What Anthropic refuses in a body's `cache_control` markers, or null: a
 * type other than "ephemeral", a `ttl` other than "5m" or "1h", more than
 * four breakpoints, and a 1-hour breakpoint after a 5-minute one in the
 * order the API reads them (tools, system, messages). The messages are the
 * API's (tests/fixtures/real-world/SOURCES.md).
 */
export function cacheControlProblem(body) {
  const marked = [];
  (body.tools ?? []).forEach((t, i) => marked.push({ block: t, at: `tools.${i}`, typed: `tools.${i}.custom` }));
  if (Array.isArray(body.system)) body.system.forEach((b, i) => marked.push({ block: b, at: `system.${i}`, typed: `system.${i}` }));
  (body.messages ?? []).forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((b, j) => marked.push({ block: b, at: `messages.${i}.content.${j}`, typed: `messages.${i}.content.${j}.${b?.type}` }));
  });
  let shorter = false;
  let count = 0;
  for (const { block, at, typed } of marked) {
    const cc = block?.cache_control;
    if (cc === undefined || cc === null) continue;
    count++;
    if (cc.type !== "ephemeral") return `${typed}.cache_control.type: Input should be 'ephemeral'`;
    if (cc.ttl !== undefined && cc.ttl !== "5m" && cc.ttl !== "1h") return `${typed}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'`;
    if (cc.ttl === "1h" && shorter) {
      return `${at}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: \`tools\`, \`system\`, \`messages\`.`;
    }
    if (cc.ttl !== "1h") shorter = true;
  }
  if (count > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${count}.`;
  return null;
}

const hrNow = () => Number(process.hrtime.bigint()) / 1e6;

/** The answer as the provider streams it (server-sent events). */
async function streamAnswer(res, provider, body, step, text, entry, { prompt, output }) {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  // A client that hangs up mid-answer (a stopped answer) is recorded, and
  // nothing more is written to it.
  res.on("close", () => {
    if (!res.writableEnded) entry.aborted = Date.now();
  });
  const write = (chunk) => {
    if (res.destroyed) return;
    res.write(chunk);
    entry.lastByteAt = hrNow();
    entry.written = (entry.written ?? 0) + 1;
  };
  if (step.sse) {
    entry.firstPieceAt = hrNow();
    write(step.sse);
    return res.end();
  }
  const ev = (name, data) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const chunk = (data) => write(`data: ${JSON.stringify(data)}\n\n`);
  const pieces = step.toolCall ? [] : step.pieces ?? (text.match(/\S+\s*|\s+/g) || [text]);
  const pause = async (i) => {
    if (i > 0 && step.pieceDelayMs) await sleep(step.pieceDelayMs);
  };
  const model = body.model;
  if (provider === "anthropic") {
    // Usage as the non-streamed answer reports it: the input in message_start,
    // the output (cumulative) in message_delta.
    const usage = step.usage ?? { input_tokens: prompt.input, cache_creation_input_tokens: prompt.cacheWrite, cache_read_input_tokens: prompt.cacheRead, cache_creation: entry.cacheCreation, output_tokens: output, service_tier: "standard" };
    if (step.usage) entry.usage = { input: usage.input_tokens ?? 0, output: usage.output_tokens ?? 0, cacheRead: usage.cache_read_input_tokens ?? 0, cacheWrite: usage.cache_creation_input_tokens ?? 0 };
    if (step.usage) entry.cacheCreation = usage.cache_creation;
    ev("message_start", { type: "message_start", message: { id: "msg_" + Date.now(), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
    ev("ping", { type: "ping" });
    if (step.content) {
      // Blocks as given, streamed as Anthropic streams each kind: text in
      // text_delta pieces (citations as citations_delta), a tool call's input
      // in input_json_delta pieces, anything else whole in its start event.
      for (const [index, block] of step.content.entries()) {
        if (block.type === "text") {
          ev("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
          for (const citation of block.citations ?? []) {
            ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "citations_delta", citation } });
          }
          for (const piece of block.text.match(/\S+\s*|\s+/g) || [block.text]) {
            if (entry.firstPieceAt === undefined) entry.firstPieceAt = hrNow();
            ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
          }
        } else if (block.type === "tool_use" || block.type === "server_tool_use") {
          const { input, ...head } = block;
          ev("content_block_start", { type: "content_block_start", index, content_block: { ...head, input: {} } });
          ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(input) } });
        } else {
          ev("content_block_start", { type: "content_block_start", index, content_block: block });
        }
        ev("content_block_stop", { type: "content_block_stop", index });
      }
      ev("message_delta", { type: "message_delta", delta: { stop_reason: step.stopReason ?? "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
      ev("message_stop", { type: "message_stop" });
      return res.end();
    }
    if (step.toolCall) {
      ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: step.toolCall.id ?? "toolu_" + Date.now(), name: step.toolCall.name, input: {} } });
      const json = JSON.stringify(step.toolCall.input);
      for (const part of ["", json.slice(0, json.length >> 1), json.slice(json.length >> 1)]) {
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: part } });
      }
    } else {
      ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
      for (const [i, piece] of pieces.entries()) {
        await pause(i);
        if (entry.aborted) return;
        if (step.breakAfter === i) return res.destroy();
        if (step.errorAfter === i) {
          ev("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
          return res.end();
        }
        if (i === 0) entry.firstPieceAt = hrNow();
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } });
      }
    }
    ev("content_block_stop", { type: "content_block_stop", index: 0 });
    ev("message_delta", { type: "message_delta", delta: { stop_reason: step.stopReason ?? (step.toolCall ? "tool_use" : "end_turn"), stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    ev("message_stop", { type: "message_stop" });
    return res.end();
  }
  const base = { id: "chatcmpl-" + Date.now(), object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model };
  const choice = (delta, finish = null) => chunk({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  choice({ role: "assistant", content: "" });
  if (step.toolCall) {
    const args = JSON.stringify(step.toolCall.input);
    choice({ tool_calls: [{ index: 0, id: step.toolCall.id ?? "call_" + Date.now(), type: "function", function: { name: step.toolCall.name, arguments: "" } }] });
    for (const part of [args.slice(0, args.length >> 1), args.slice(args.length >> 1)]) {
      choice({ tool_calls: [{ index: 0, function: { arguments: part } }] });
    }
  } else {
    for (const [i, piece] of pieces.entries()) {
      await pause(i);
      if (entry.aborted) return;
      if (step.breakAfter === i) return res.destroy();
      if (i === 0) entry.firstPieceAt = hrNow();
      choice({ content: piece });
    }
  }
  choice({}, step.toolCall ? "tool_calls" : "stop");
  if (body.stream_options?.include_usage) {
    const usage = step.usage ?? { prompt_tokens: prompt.prompt, completion_tokens: output, total_tokens: prompt.prompt + output, prompt_tokens_details: { cached_tokens: prompt.cacheRead } };
    if (step.usage) entry.usage = { input: usage.prompt_tokens - (usage.prompt_tokens_details?.cached_tokens ?? 0), output: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0, cacheWrite: 0 };
    chunk({ ...base, choices: [], usage });
  }
  write("data: [DONE]\n\n");
  return res.end();
}

/**
 * What the Messages API refuses about server tools (Anthropic's web search),
 * or null: a server tool definition of an unknown type or without its name,
 * a `server_tool_use` replayed without its `web_search_tool_result` in the
 * same assistant message, and citations that are not a list.
 */
export function serverToolProblem(body) {
  for (const t of body.tools ?? []) {
    if (t.type === undefined) continue;
    if (!/^web_search_\d{8}$/.test(t.type) || t.name !== "web_search") return `tools: unknown server tool ${JSON.stringify(t)}`;
  }
  for (const [i, m] of (body.messages ?? []).entries()) {
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    // A paused turn (pause_turn) is continued by sending its reply back as the last message.
    if (i === body.messages.length - 1) continue;
    const uses = m.content.filter((b) => b.type === "server_tool_use").map((b) => b.id);
    const results = m.content.filter((b) => b.type === "web_search_tool_result").map((b) => b.tool_use_id);
    for (const id of uses) if (!results.includes(id)) return `messages.${i}: server_tool_use ${id} has no web_search_tool_result`;
    for (const id of results) if (!uses.includes(id)) return `messages.${i}: web_search_tool_result ${id} answers no server_tool_use`;
    for (const b of m.content) if (b.type === "text" && b.citations !== undefined && !Array.isArray(b.citations)) return `messages.${i}: citations must be a list`;
  }
  return null;
}

export function errorBody(provider, status) {
  if (provider === "openai") {
    return { error: { message: `stand-in error ${status}`, type: status === 429 ? "rate_limit_exceeded" : "server_error", code: null } };
  }
  const type = status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : "api_error";
  return { type: "error", error: { type, message: `stand-in error ${status}` } };
}
