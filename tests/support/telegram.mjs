// The Telegram Bot API stand-in: the methods Hearth calls, with the Bot
// API's own error bodies for what the real API rejects (lengths, markup,
// callback queries, previews), scripted failures and outages; every request
// recorded so tests can assert on what Hearth sent.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { listen, sendJson, sleep } from "./http.mjs";
import { parseMultipart } from "./multipart.mjs";

// Real Bot API error bodies for previews (tests/fixtures/real-world/SOURCES.md).
const PREVIEW_ERRORS = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/real-world/telegram-api/preview-errors.json"), "utf8"),
);

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
