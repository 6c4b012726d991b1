// A Discord API stand-in (the parts Hearth uses): interaction webhooks
// (edit the original response, follow-ups), channel messages with the bot
// token, and command registration. It speaks Discord's wire format, including
// real error and rate-limit bodies, and records every request.
//
// Also: signing helpers for interaction requests (Ed25519, as Discord signs).
import crypto from "node:crypto";
import http from "node:http";
import { parseMultipart } from "./multipart.mjs";

function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

let snowflakeSeq = 0n;
/** A snowflake id; `ageMs` back-dates its timestamp. */
export function snowflake(ageMs = 0) {
  const ms = BigInt(Date.now() - ageMs - 1420070400000);
  snowflakeSeq++;
  return ((ms << 22n) | (snowflakeSeq & 0x3fffffn)).toString();
}

/**
 * Routes: "original" (PATCH /webhooks/{app}/{token}/messages/@original),
 * "followup" (POST /webhooks/{app}/{token}), "channel" (POST /channels/{id}/messages),
 * "commands" (PUT /applications/{app}/commands, or .../guilds/{g}/commands),
 * "attachment" (GET of a CDN file served with `serveAttachment`),
 * "dm" (POST /users/@me/channels: the bot's DM channel with `recipient_id`),
 * "edit" (PATCH /channels/{id}/messages/{id}).
 *
 * Components (discord.com/developers/docs/components/reference): a
 * message's `components` are action rows (type 1) of at most 5 buttons
 * (type 2), each with a `style` of 1-5, a `label` of at most 80
 * characters, and (styles 1-4) a `custom_id` of 1-100 characters, unique in
 * the message; anything else is refused as Discord does (50035 Invalid Form
 * Body).
 */
function componentsProblem(components) {
  if (components === undefined) return null;
  if (!Array.isArray(components) || components.length > 5) return "components";
  const ids = new Set();
  for (const row of components) {
    if (row?.type !== 1 || !Array.isArray(row.components) || row.components.length > 5) return "components.type";
    for (const b of row.components) {
      if (b?.type !== 2) continue;
      if (!Number.isInteger(b.style) || b.style < 1 || b.style > 5) return "components.style";
      if (typeof b.label === "string" && [...b.label].length > 80) return "components.label";
      if (b.style <= 4) {
        if (typeof b.custom_id !== "string" || b.custom_id.length < 1 || b.custom_id.length > 100 || ids.has(b.custom_id)) return "components.custom_id";
        ids.add(b.custom_id);
      }
    }
  }
  return null;
}
export async function startDiscord({ appId = "1100000000000000001", botToken = "test-bot-token" } = {}) {
  const state = { appId, botToken, requests: [], failures: new Map(), outages: new Map(), nextId: 1n, files: new Map(), waiters: new Set(), dms: new Map(), sent: new Map() };
  const message = (body, extra = {}) => ({
    id: (1300000000000000000n + state.nextId++).toString(),
    type: 20,
    content: body.content ?? "",
    channel_id: extra.channel_id ?? "0",
    author: { id: appId, username: "Hearth", bot: true },
    timestamp: new Date().toISOString(),
    flags: body.flags ?? 0,
    ...extra,
  });
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://x");
    const p = url.pathname.replace(/^\/api\/v\d+/, "");
    if (req.method === "GET" && url.pathname.startsWith("/attachments/")) {
      state.requests.push({ route: "attachment", method: "GET", path: url.pathname, params: {}, headers: req.headers, body: null, at: Date.now() });
      const f = state.files.get(url.pathname);
      if (!f) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
      res.writeHead(200, { "content-type": f.contentType, "content-length": f.bytes.length });
      return res.end(f.bytes);
    }
    let m;
    let route = "unknown";
    const params = {};
    if ((m = p.match(/^\/webhooks\/([^/]+)\/([^/]+)\/messages\/@original$/)) && req.method === "PATCH") {
      route = "original";
      [, params.app, params.token] = m;
    } else if ((m = p.match(/^\/webhooks\/([^/]+)\/([^/]+)$/)) && req.method === "POST") {
      route = "followup";
      [, params.app, params.token] = m;
    } else if ((m = p.match(/^\/channels\/([^/]+)\/messages$/)) && req.method === "POST") {
      route = "channel";
      [, params.channel] = m;
    } else if ((m = p.match(/^\/channels\/([^/]+)\/messages\/(\d+)$/)) && req.method === "PATCH") {
      route = "edit";
      [, params.channel, params.message] = m;
    } else if (p === "/users/@me/channels" && req.method === "POST") {
      route = "dm";
    } else if ((m = p.match(/^\/channels\/([^/]+)\/typing$/)) && req.method === "POST") {
      route = "typing";
      [, params.channel] = m;
    } else if ((m = p.match(/^\/applications\/([^/]+)(?:\/guilds\/([^/]+))?\/commands$/)) && req.method === "PUT") {
      route = "commands";
      [, params.app, params.guild] = m;
    }
    let body = null;
    let files = {};
    if (/^multipart\/form-data/i.test(req.headers["content-type"] ?? "")) {
      // Attachments: `payload_json` carries the message, `files[n]` the files.
      const form = parseMultipart(req.headers["content-type"], Buffer.concat(chunks));
      if (!form) return sendJson(res, 400, { message: "400: Bad Request", code: 0 });
      files = form.files;
      try {
        body = JSON.parse(form.fields.payload_json ?? "{}");
      } catch {
        return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      }
    } else {
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        return sendJson(res, 400, { message: "400: Bad Request", code: 0 });
      }
    }
    const entry = { route, method: req.method, path: p, params, headers: req.headers, body, files, at: Date.now() };
    state.requests.push(entry);
    for (const w of [...state.waiters]) if (w.test()) w.done();
    const down = state.outages.get(route);
    if (down) return sendJson(res, down.status, down.body, down.headers);
    const scripted = state.failures.get(route);
    if (scripted && scripted.length) {
      const f = scripted.shift();
      return sendJson(res, f.status, f.body, f.headers);
    }
    const needsBot = ["channel", "commands", "typing", "dm", "edit"].includes(route);
    if (needsBot && req.headers.authorization !== `Bot ${state.botToken}`) {
      return sendJson(res, 401, { message: "401: Unauthorized", code: 0 });
    }
    if ((route === "original" || route === "followup" || route === "commands") && params.app !== state.appId) {
      return sendJson(res, 404, { message: "Unknown Webhook", code: 10015 });
    }
    if (route === "typing") {
      res.writeHead(204);
      return res.end();
    }
    if (route === "dm") {
      if (!/^\d{17,20}$/.test(String(body?.recipient_id ?? ""))) {
        return sendJson(res, 400, { message: "Invalid Form Body", code: 50035, errors: { recipient_id: { _errors: [{ code: "NUMBER_TYPE_COERCE", message: "Value is not snowflake." }] } } });
      }
      // The DM channel of a user, as the tests name it (4 and the id's other digits).
      const id = `4${String(body.recipient_id).slice(1)}`;
      state.dms.set(id, body.recipient_id);
      return sendJson(res, 200, { id, type: 1, last_message_id: null, flags: 0, recipients: [{ id: body.recipient_id, username: "owner", discriminator: "0" }] });
    }
    const bad = componentsProblem(body?.components);
    if (bad) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035, errors: { [bad]: { _errors: [{ code: "COMPONENT_INVALID", message: "Invalid component" }] } } });
    if (route === "edit") {
      const known = state.sent.get(params.message);
      if (!known || known.channel_id !== params.channel) return sendJson(res, 404, { message: "Unknown Message", code: 10008 });
      Object.assign(known, { content: body?.content ?? known.content, components: body?.components ?? known.components });
      return sendJson(res, 200, known);
    }
    if (route === "channel" && body?.message_reference) {
      const ref = body.message_reference;
      // Discord: an unknown message is refused unless fail_if_not_exists is false.
      if (!/^\d+$/.test(String(ref.message_id ?? "")) && ref.fail_if_not_exists !== false) {
        return sendJson(res, 400, { message: "Invalid Form Body", code: 50035, errors: { message_reference: { _errors: [{ code: "REPLIES_UNKNOWN_MESSAGE", message: "Unknown message" }] } } });
      }
    }
    if (route === "original" || route === "followup" || route === "channel") {
      const content = body?.content ?? "";
      const attached = Object.keys(files).length;
      if (!content && !attached) return sendJson(res, 400, { message: "Cannot send an empty message", code: 50006 });
      if (content.length > 2000) {
        return sendJson(res, 400, {
          message: "Invalid Form Body",
          code: 50035,
          errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }] } },
        });
      }
      const m = message(body, params.channel ? { channel_id: params.channel } : {});
      if (route === "channel") state.sent.set(m.id, { ...m, components: body?.components ?? [] });
      return sendJson(res, 200, m);
    }
    if (route === "commands") {
      if (!Array.isArray(body)) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      // Discord's rules: a slash command (type 1) has a lowercase name and a
      // 1-100 character description; a user or message command (2, 3) a
      // name of up to 32 characters (spaces allowed) and no description.
      const bad = body.findIndex((c) => {
        const type = c.type ?? 1;
        if (type === 1) return !/^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$/u.test(c.name ?? "") || !(c.description?.length >= 1 && c.description.length <= 100);
        return !(typeof c.name === "string" && c.name.length >= 1 && c.name.length <= 32) || (c.description ?? "") !== "";
      });
      if (bad >= 0) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035, errors: { [bad]: { _errors: [{ code: "APPLICATION_COMMAND_INVALID", message: "Invalid command" }] } } });
      return sendJson(
        res,
        200,
        body.map((c, i) => ({ id: (1200000000000000000n + BigInt(i)).toString(), application_id: appId, version: "1", type: 1, ...c, ...(params.guild ? { guild_id: params.guild } : {}) })),
      );
    }
    return sendJson(res, 404, { message: "404: Not Found", code: 0 });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const base = `${origin}/api/v10`;
  return {
    state,
    base,
    appId,
    botToken,
    requests: state.requests,
    /** Requests to one route ("original", "followup", "channel", "commands"). */
    calls: (route) => state.requests.filter((r) => r.route === route),
    /** Serves bytes as a CDN attachment; returns the attachment object of an interaction's `resolved`. */
    serveAttachment: (id, filename, bytes, contentType) => {
      const p = `/attachments/1/${id}/${filename}`;
      state.files.set(p, { bytes, contentType });
      return { id, filename, size: bytes.length, url: `${origin}${p}?ex=1&is=2&hm=3`, proxy_url: `${origin}${p}`, content_type: contentType };
    },
    /** Resolves the moment `route` has had `n` requests in all (no polling delay in timings). */
    untilCalls: (route, n, { timeoutMs = 10000 } = {}) =>
      new Promise((resolve, reject) => {
        const count = () => state.requests.filter((r) => r.route === route).length;
        if (count() >= n) return resolve();
        const timer = setTimeout(() => {
          state.waiters.delete(w);
          reject(new Error(`timed out waiting for ${route} #${n}`));
        }, timeoutMs);
        const w = { test: () => count() >= n, done: () => (clearTimeout(timer), state.waiters.delete(w), resolve()) };
        state.waiters.add(w);
      }),
    /** Scripts the next answer of a route. */
    fail: (route, status, body, headers = {}) => {
      if (!state.failures.has(route)) state.failures.set(route, []);
      state.failures.get(route).push({ status, body, headers });
    },
    /** Scripts a 429 as Discord sends it. */
    rateLimit: (route, retryAfter = 0.5, { global = false } = {}) => {
      if (!state.failures.has(route)) state.failures.set(route, []);
      state.failures.get(route).push({
        status: 429,
        body: { message: "You are being rate limited.", retry_after: retryAfter, global },
        headers: {
          "retry-after": String(Math.ceil(retryAfter)),
          "x-ratelimit-limit": "5",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset-after": String(retryAfter),
          "x-ratelimit-bucket": "abcd1234",
          "x-ratelimit-scope": global ? "global" : "user",
          ...(global ? { "x-ratelimit-global": "true" } : {}),
        },
      });
    },
    /** Every request to `route` fails this way until recover(). */
    outage: (route, status = 500, body = { message: "500: Internal Server Error", code: 0 }, headers = {}) => {
      state.outages.set(route, { status, body, headers });
    },
    recover: () => state.outages.clear(),
    reset: () => {
      state.requests.length = 0;
      state.failures.clear();
      state.outages.clear();
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/** A fresh Ed25519 key pair: the raw public key as hex (DISCORD_PUBLIC_KEY) and a signer. */
export function discordKeys() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
  const publicHex = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
  return {
    publicHex,
    /** Signature headers for a body, as Discord sends them. */
    sign(body, timestamp = String(Math.floor(Date.now() / 1000))) {
      const signature = crypto.sign(null, Buffer.from(timestamp + body), privateKey).toString("hex");
      return { "X-Signature-Ed25519": signature, "X-Signature-Timestamp": timestamp };
    },
  };
}
