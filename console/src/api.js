// Talking to the Worker: same-origin fetches with the login cookie. Every
// request that is not a read carries X-Hearth-Console: 1 (the CSRF check;
// the browser adds Origin itself).

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function errorOf(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    // A memory call's refusal is {error: kind, message}; the rest {error: message}.
    return new ApiError(res.status, j.message ?? j.error ?? text);
  } catch {
    return new ApiError(res.status, text || res.statusText);
  }
}

/** A fetch to the Worker; throws ApiError on a status ≥ 400. */
export async function request(method, path, { json, body, headers = {}, raw = false } = {}) {
  const h = { ...headers };
  if (method !== "GET" && method !== "HEAD") h["x-hearth-console"] = "1";
  if (json !== undefined) {
    h["content-type"] = "application/json";
    body = JSON.stringify(json);
  }
  const res = await fetch(path, { method, headers: h, body, credentials: "same-origin", cache: "no-store" });
  if (res.status === 401 && !path.startsWith("/console/")) {
    window.dispatchEvent(new CustomEvent("hearth:logged-out"));
  }
  if (!res.ok) throw await errorOf(res);
  if (raw) return res;
  const type = res.headers.get("content-type") ?? "";
  return type.includes("json") ? res.json() : res.text();
}

export const get = (path) => request("GET", path);
/** A GET whose body is wanted as text, whatever its type (a file, a diff). */
export const getText = async (path) => (await request("GET", path, { raw: true })).text();
export const post = (path, json) => request("POST", path, { json });
export const put = (path, text) => request("PUT", path, { body: text, headers: { "content-type": "text/plain; charset=utf-8" } });
export const del = (path) => request("DELETE", path);

/** `/api/agents/{id}` + rest, the id encoded. */
export const agentPath = (agent, rest = "") => `/api/agents/${encodeURIComponent(agent)}${rest}`;

/** Server-sent events of a streamed POST: calls onEvent(name, data, id) for each. */
export async function stream(path, json, onEvent, { idempotencyKey } = {}) {
  const headers = { accept: "text/event-stream" };
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  const res = await request("POST", path, { json, headers, raw: true });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message";
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) {
        let parsed;
        try {
          parsed = JSON.parse(data.join("\n"));
        } catch {
          parsed = { text: data.join("\n") };
        }
        onEvent(event, parsed, id);
      }
    }
  }
}
