// What every HTTP stand-in shares: a local server on a free port that hands
// its handler the whole body, and JSON answers.
import http from "node:http";

/** A server on 127.0.0.1 (port 0: a free one); `handler(req, res, raw)` gets the whole body. */
export function listen(handler) {
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

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A JSON answer with `status` and `headers`. */
export function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
