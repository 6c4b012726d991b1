// A WhatsApp Cloud API stand-in (the parts Hearth uses): sending to
// `/{phone-number-id}/messages` (text messages, and `status: read` with the
// typing indicator), media by id (`/{media-id}` gives a URL, the URL the
// bytes, both with the access token). It answers as the Graph API does,
// errors included: `190` for a bad token, `100` for a bad parameter or an
// unknown object, and `131047` (re-engagement) for a text sent more than 24
// hours after the customer last wrote to the number, which it tracks from
// the notifications the tests deliver (`customerWrote`). Every request is
// recorded.
//
// Also: notifications signed as Meta signs them (`X-Hub-Signature-256`).
import crypto from "node:crypto";
import http from "node:http";

/** `X-Hub-Signature-256` of `body` with the app secret. */
export function hubSignature(appSecret, body) {
  return "sha256=" + crypto.createHmac("sha256", appSecret).update(body).digest("hex");
}

const WINDOW_MS = 24 * 3600 * 1000;

function graphError(code, message, details, type = "OAuthException") {
  return {
    error: {
      message,
      type,
      code,
      ...(details ? { error_data: { messaging_product: "whatsapp", details } } : {}),
      fbtrace_id: "A" + crypto.randomBytes(9).toString("base64url"),
    },
  };
}

export async function startWhatsApp({ token = "EAAG-test-token", phoneNumberId = "1122334455667", displayNumber = "15550783881" } = {}) {
  const state = {
    token,
    phoneNumberId,
    displayNumber,
    requests: [],
    /** wa_id -> when the customer last wrote (ms). */
    lastInbound: new Map(),
    /** media id -> {bytes, mime} */
    media: new Map(),
    failures: [],
    nextId: 1,
  };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://x");
    const entry = { method: req.method, path: url.pathname, headers: req.headers, at: Date.now() };
    state.requests.push(entry);
    const send = (status, body) => {
      entry.status = status;
      entry.answer = body;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${state.token}`) {
      return send(401, graphError(190, "Invalid OAuth access token - Cannot parse access token"));
    }
    let m;
    if (req.method === "GET" && (m = url.pathname.match(/^\/media\/(\w+)$/))) {
      entry.kind = "media-bytes";
      const item = state.media.get(m[1]);
      if (!item) return send(404, graphError(100, "Unsupported get request."));
      res.writeHead(200, { "content-type": item.mime, "content-length": item.bytes.length });
      return res.end(item.bytes);
    }
    if (req.method === "GET" && (m = url.pathname.match(/^\/v[\d.]+\/(\w+)$/))) {
      entry.kind = "media-info";
      const item = state.media.get(m[1]);
      if (!item) {
        return send(400, graphError(100, `Unsupported get request. Object with ID '${m[1]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`, undefined, "GraphMethodException"));
      }
      const origin = `http://127.0.0.1:${server.address().port}`;
      return send(200, {
        messaging_product: "whatsapp",
        url: `${origin}/media/${m[1]}`,
        mime_type: item.mime,
        sha256: crypto.createHash("sha256").update(item.bytes).digest("hex"),
        file_size: item.bytes.length,
        id: m[1],
      });
    }
    if (req.method === "POST" && (m = url.pathname.match(/^\/v[\d.]+\/(\w+)\/messages$/))) {
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        return send(400, graphError(100, "(#100) Invalid parameter"));
      }
      entry.body = body;
      if (m[1] !== state.phoneNumberId) {
        return send(400, graphError(100, `Unsupported post request. Object with ID '${m[1]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`, undefined, "GraphMethodException"));
      }
      if (body.messaging_product !== "whatsapp") return send(400, graphError(100, "(#100) The parameter messaging_product is required."));
      if (body.status === "read") {
        entry.kind = "read";
        return send(200, { success: true });
      }
      entry.kind = "send";
      const scripted = state.failures.shift();
      if (scripted) return send(scripted.status, scripted.body);
      if (!body.to) return send(400, graphError(100, "(#100) The parameter to is required."));
      if (body.type !== "text" || typeof body.text?.body !== "string" || !body.text.body) {
        return send(400, graphError(100, "(#100) Param text['body'] is required"));
      }
      if ([...body.text.body].length > 4096) {
        return send(400, graphError(100, "(#100) Param text['body'] must be at most 4096 characters long."));
      }
      const last = state.lastInbound.get(body.to);
      if (last === undefined || Date.now() - last > WINDOW_MS) {
        return send(400, graphError(131047, "(#131047) Re-engagement message", "Message failed to send because more than 24 hours have passed since the customer last replied to this number."));
      }
      const id = `wamid.HBgL${String(state.nextId++).padStart(6, "0")}`;
      return send(200, { messaging_product: "whatsapp", contacts: [{ input: body.to, wa_id: body.to }], messages: [{ id }] });
    }
    return send(404, graphError(100, "Unknown path"));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    state,
    token,
    phoneNumberId,
    displayNumber,
    base: `http://127.0.0.1:${port}/v23.0`,
    /** The customer `waId` wrote at `at` (ms): their window is open for 24 hours from it. */
    customerWrote(waId, at = Date.now()) {
      state.lastInbound.set(waId, at);
    },
    /** Serves media by id (what a notification names). */
    serveMedia(id, bytes, mime) {
      state.media.set(id, { bytes, mime });
    },
    sent: () => state.requests.filter((r) => r.kind === "send" && r.status === 200),
    attempts: () => state.requests.filter((r) => r.kind === "send"),
    calls: (kind) => state.requests.filter((r) => r.kind === kind),
    fail(status, body) {
      state.failures.push({ status, body });
    },
    reset() {
      state.requests.length = 0;
      state.failures.length = 0;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
