// A Slack Web API stand-in (the parts Hearth uses): chat.postMessage,
// chat.update, chat.delete, and files served from `/files-pri/…` to the bot
// token. It answers as Slack does: HTTP 200 with `{"ok": false, "error": …}`
// for what Slack refuses (`not_authed`, `invalid_auth`, `channel_not_found`,
// `not_in_channel`, `no_text`, `msg_too_long` past 40,000 characters,
// `invalid_blocks`, `message_not_found`), HTTP 429 with `Retry-After` when
// rate-limited, and its sign-in page (a 200 web page) for a file fetched
// without the token. Every request is recorded.
//
// users.info answers from `users` (add them with `addUser`) in Slack's
// shape (`{ok: true, user: {id, name, real_name, profile: {display_name,
// real_name, ...}}}`); an unknown id gets `user_not_found`, and a token
// without the `users:read` scope (`scopes`) gets `missing_scope` with
// `needed`/`provided`, as Slack answers. Like Slack, it reads `user` from the
// query string or a form body only (the method takes no JSON): a JSON body
// is `invalid_arguments`.
//
// Buttons (api.slack.com/reference/block-kit/block-elements#button): an
// `actions` block's buttons need a plain_text `text` of at most 75
// characters, an `action_id` of at most 255, a `value` of at most 2,000 and
// a `style` of primary or danger if any (else `invalid_blocks`). A message
// posted to a user id goes to the app's DM with them: the answer names that
// DM's channel (`D…`), as Slack's does. Each tap's `response_url` is served
// here (`/actions/…`): what is posted to it is recorded (`responses`).
//
// Also: Events API requests signed as Slack signs them (v0, HMAC-SHA256),
// and interactivity payloads (`block_actions`, form-encoded `payload=`).
import crypto from "node:crypto";
import http from "node:http";

/** `X-Slack-Signature` of `body` at `ts` (seconds) with `secret`. */
export function slackSignature(secret, ts, body) {
  return "v0=" + crypto.createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex");
}

/** A form-encoded interactivity body (`payload=` and the JSON), as Slack posts a tap. */
export function interactionBody(payload) {
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/** Headers of an interactivity request signed at `ts` (default: now). */
export function signedFormHeaders(secret, body, { ts = Math.floor(Date.now() / 1000) } = {}) {
  return { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": String(ts), "x-slack-signature": slackSignature(secret, ts, body) };
}

/** Whether `blocks` are what chat.postMessage / chat.update take. */
function blocksProblem(blocks) {
  if (!Array.isArray(blocks) || blocks.length > 50 || !blocks.every((b) => b && typeof b.type === "string")) return true;
  for (const b of blocks.filter((b) => b.type === "actions")) {
    if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 25) return true;
    for (const e of b.elements) {
      if (e.type !== "button") continue;
      const text = e.text;
      if (text?.type !== "plain_text" || typeof text.text !== "string" || [...text.text].length > 75 || !text.text) return true;
      if (e.action_id !== undefined && (typeof e.action_id !== "string" || e.action_id.length > 255)) return true;
      if (e.value !== undefined && (typeof e.value !== "string" || e.value.length > 2000)) return true;
      if (e.style !== undefined && !["primary", "danger"].includes(e.style)) return true;
    }
  }
  return false;
}

/** Headers of an Events API request signed at `ts` (default: now). */
export function signedHeaders(secret, body, { ts = Math.floor(Date.now() / 1000), retry } = {}) {
  return {
    "content-type": "application/json",
    "x-slack-request-timestamp": String(ts),
    "x-slack-signature": slackSignature(secret, ts, body),
    ...(retry ? { "x-slack-retry-num": String(retry), "x-slack-retry-reason": "http_timeout" } : {}),
  };
}

let tsSeq = 0;
const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++tsSeq).padStart(6, "0")}`;

const DEFAULT_SCOPES = ["app_mentions:read", "chat:write", "im:history", "files:read", "users:read"];

export async function startSlack({ token = "xoxb-test-token", botUser = "U0LAN0Z89", scopes = DEFAULT_SCOPES } = {}) {
  const state = {
    token,
    botUser,
    /** The bot token's scopes (what `missing_scope` checks). */
    scopes: new Set(scopes),
    /** user id -> user object as users.info returns it. */
    users: new Map(),
    requests: [],
    /** method -> [{status, body, headers}] answered next, in order. */
    failures: new Map(),
    /** channel id -> Slack error name, for every post to it. */
    broken: new Map(),
    /** `${channel}:${ts}` -> {text, thread_ts} of the messages the bot has. */
    messages: new Map(),
    files: new Map(),
    /** What was posted to each tap's response_url: {path, body}. */
    responses: [],
  };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://x");
    const send = (status, body, headers = {}) => {
      entry.status = status;
      entry.answer = body;
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(JSON.stringify(body));
    };
    const entry = { path: url.pathname, headers: req.headers, at: Date.now() };
    if (req.method === "GET" && url.pathname.startsWith("/files-pri/")) {
      entry.method = "file";
      state.requests.push(entry);
      const f = state.files.get(url.pathname);
      if (req.headers.authorization !== `Bearer ${state.token}`) {
        // Slack answers a file fetched without the bot token with its sign-in page.
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end("<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in</body></html>");
      }
      if (!f) {
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("Not Found");
      }
      res.writeHead(200, { "content-type": f.contentType, "content-length": f.bytes.length });
      return res.end(f.bytes);
    }
    if (req.method === "POST" && url.pathname.startsWith("/actions/")) {
      // A tap's response_url: Slack takes the message's new form as JSON.
      let posted = null;
      try {
        posted = JSON.parse(raw);
      } catch {
        res.writeHead(400, { "content-type": "text/plain" });
        return res.end("invalid_payload");
      }
      state.responses.push({ path: url.pathname, body: posted, at: Date.now() });
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ ok: true }));
    }
    const m = url.pathname.match(/^\/api\/([\w.]+)$/);
    entry.method = m ? m[1] : "unknown";
    let body = {};
    const form = /^application\/x-www-form-urlencoded/.test(req.headers["content-type"] ?? "");
    try {
      body = !raw ? {} : form ? Object.fromEntries(new URLSearchParams(raw)) : JSON.parse(raw);
    } catch {
      state.requests.push(entry);
      return send(200, { ok: false, error: "invalid_json" });
    }
    entry.body = body;
    state.requests.push(entry);
    if (!m) return send(404, { ok: false, error: "unknown_method" });
    const auth = req.headers.authorization;
    if (!auth) return send(200, { ok: false, error: "not_authed" });
    if (auth !== `Bearer ${state.token}`) return send(200, { ok: false, error: "invalid_auth" });
    const scripted = state.failures.get(entry.method);
    if (scripted?.length) {
      const f = scripted.shift();
      return send(f.status ?? 200, f.body, f.headers ?? {});
    }
    const channel = body.channel;
    if (["chat.postMessage", "chat.update", "chat.delete"].includes(entry.method)) {
      if (!channel) return send(200, { ok: false, error: "channel_not_found" });
      if (state.broken.has(channel)) return send(200, { ok: false, error: state.broken.get(channel) });
    }
    switch (entry.method) {
      case "users.info": {
        if (!state.scopes.has("users:read")) {
          return send(200, { ok: false, error: "missing_scope", needed: "users:read", provided: [...state.scopes].join(",") });
        }
        // Arguments come in the query string or a form body, never JSON.
        const user = url.searchParams.get("user") ?? (form ? body.user : undefined);
        entry.user = user;
        if (!user) return send(200, { ok: false, error: "invalid_arguments" });
        const found = state.users.get(user);
        if (!found) return send(200, { ok: false, error: "user_not_found" });
        return send(200, { ok: true, user: found });
      }
      case "chat.postMessage": {
        const text = body.text ?? "";
        if (body.blocks !== undefined && blocksProblem(body.blocks)) return send(200, { ok: false, error: "invalid_blocks" });
        if (!text && !body.blocks?.length) return send(200, { ok: false, error: "no_text" });
        if ([...text].length > 40000) return send(200, { ok: false, error: "msg_too_long" });
        const ts = nextTs();
        // Posted to a member's id: the app's DM with them.
        const where = /^[UW]/.test(channel) ? `D${channel.slice(1)}` : channel;
        state.messages.set(`${where}:${ts}`, { text, thread_ts: body.thread_ts, blocks: body.blocks });
        return send(200, { ok: true, channel: where, ts, message: { type: "message", user: state.botUser, text, ts, ...(body.thread_ts ? { thread_ts: body.thread_ts } : {}) } });
      }
      case "chat.update": {
        const key = `${channel}:${body.ts}`;
        if (!state.messages.has(key)) return send(200, { ok: false, error: "message_not_found" });
        if (!body.text && !body.blocks) return send(200, { ok: false, error: "no_text" });
        if (body.blocks !== undefined && blocksProblem(body.blocks)) return send(200, { ok: false, error: "invalid_blocks" });
        if ([...(body.text ?? "")].length > 40000) return send(200, { ok: false, error: "msg_too_long" });
        state.messages.get(key).text = body.text;
        return send(200, { ok: true, channel, ts: body.ts, text: body.text });
      }
      case "chat.delete": {
        const key = `${channel}:${body.ts}`;
        if (!state.messages.has(key)) return send(200, { ok: false, error: "message_not_found" });
        state.messages.delete(key);
        return send(200, { ok: true, channel, ts: body.ts });
      }
      default:
        return send(200, { ok: false, error: "unknown_method" });
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  const origin = `http://127.0.0.1:${port}`;
  return {
    state,
    token,
    botUser,
    base: `${origin}/api`,
    /** Serves `bytes` as a shared file; returns its `url_private_download`. */
    serveFile(bytes, name, contentType) {
      const path = `/files-pri/T061EG9R6-F${state.files.size + 1}/download/${name}`;
      state.files.set(path, { bytes, contentType });
      return `${origin}${path}`;
    },
    calls: (method) => state.requests.filter((r) => r.method === method),
    /**
     * A workspace member, as users.info returns one (fields the user never
     * filled are empty strings, as Slack sends them).
     */
    addUser(id, { displayName = "", realName = "", name = id.toLowerCase() } = {}) {
      state.users.set(id, {
        id,
        team_id: "T012AB3C4",
        name,
        deleted: false,
        real_name: realName,
        tz: "America/Los_Angeles",
        profile: {
          real_name: realName,
          display_name: displayName,
          real_name_normalized: realName,
          display_name_normalized: displayName,
          image_48: "https://avatars.slack-edge.com/example_48.jpg",
          team: "T012AB3C4",
        },
        is_admin: false,
        is_bot: false,
        updated: 1502138686,
      });
    },
    /** The messages posted that Slack accepted. */
    posted: () => state.requests.filter((r) => r.method === "chat.postMessage" && r.answer?.ok),
    /** What a channel (or a thread of it) shows now. */
    shown: (channel, thread) =>
      [...state.messages.entries()]
        .filter(([k, v]) => k.startsWith(`${channel}:`) && (thread === undefined || v.thread_ts === thread))
        .map(([, v]) => v.text),
    fail(method, answer) {
      if (!state.failures.has(method)) state.failures.set(method, []);
      state.failures.get(method).push(answer);
    },
    /** The app's base for response_urls: `${actions}/T…/…/…`. */
    actions: `${origin}/actions`,
    reset() {
      state.requests.length = 0;
      state.responses.length = 0;
      state.failures.clear();
      state.broken.clear();
      state.scopes = new Set(scopes);
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
