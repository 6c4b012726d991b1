// MCP servers for the tests. `startEverything` runs the official reference
// server (@modelcontextprotocol/server-everything) in its Streamable HTTP
// mode on 127.0.0.1, as a child process. `startMcpStandin` is a small
// Streamable HTTP MCP server of our own for what the reference server does
// not do on demand: answer slowly, drop the connection, send garbage, page its
// tool list, forget its sessions, check a bearer token, and count requests.
import { spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts `mcp-server-everything streamableHttp` (it reads PORT) and waits until it listens. */
export async function startEverything() {
  const port = await freePort();
  const entry = path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  const child = spawn(process.execPath, [entry, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server-everything exited: ${output}`);
    if (/listening on port/i.test(output)) break;
    if (Date.now() - started > 15000) throw new Error(`server-everything did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    output: () => output,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/**
 * A Streamable HTTP MCP server stand-in. Tools:
 *   echo {message}        → "Echo: <message>" (text)
 *   add {a, b}            → the sum (text), listed on the second page
 *   fail {}               → an isError result
 *   slow {ms}             → answers after `ms`
 *   drop {}               → destroys the connection without an answer
 *   garbage {}            → a 200 whose body is not JSON-RPC
 * Options: token (Bearer required), sse (answer as text/event-stream), pageSize.
 */
export async function startMcpStandin({ token, sse = true, pageSize = 3 } = {}) {
  const state = { requests: [], sessions: new Set(), nextSession: 1, forgetSessions: false, token };
  const tools = [
    { name: "echo", description: "Echoes back the input string", inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] } },
    { name: "fail", description: "Always fails", inputSchema: { type: "object", properties: {} } },
    { name: "slow", description: "Answers after ms milliseconds", inputSchema: { type: "object", properties: { ms: { type: "integer" } } } },
    { name: "drop", description: "Drops the connection", inputSchema: { type: "object", properties: {} } },
    { name: "garbage", description: "Answers with garbage", inputSchema: { type: "object", properties: {} } },
    { name: "add", description: "Adds two numbers", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
  ];
  const sockets = new Set();
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    let msg = null;
    try {
      msg = raw ? JSON.parse(raw) : null;
    } catch {}
    const entry = { at: Date.now(), httpMethod: req.method, headers: req.headers, method: msg?.method, body: msg, start: Date.now() };
    state.requests.push(entry);
    const reply = (status, body, headers = {}) => {
      entry.end = Date.now();
      if (body === undefined) {
        res.writeHead(status, headers);
        return res.end();
      }
      if (sse && status === 200) {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers });
        // A notification before the answer, as real servers send progress and logs.
        res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "working" } })}\n\n`);
        res.write(`event: message\nid: ${Date.now()}\ndata: ${JSON.stringify(body)}\n\n`);
        return res.end();
      }
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST") return reply(405, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Method not allowed" } }, { allow: "POST" });
    if (state.token && req.headers.authorization !== `Bearer ${state.token}`) return reply(401, { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } });
    if (!/application\/json/.test(req.headers.accept || "") || !/text\/event-stream/.test(req.headers.accept || "")) {
      return reply(406, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Not Acceptable: Client must accept both application/json and text/event-stream" } });
    }
    if (!msg || msg.jsonrpc !== "2.0") return reply(400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    const session = req.headers["mcp-session-id"];
    if (msg.method === "initialize") {
      const id = `standin-session-${state.nextSession++}`;
      state.sessions.add(id);
      return reply(200, { jsonrpc: "2.0", id: msg.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "standin", version: "1.0.0" } } }, { "mcp-session-id": id });
    }
    if (!session || !state.sessions.has(session) || state.forgetSessions) {
      state.sessions.clear();
      state.forgetSessions = false;
      return reply(404, { jsonrpc: "2.0", id: msg.id ?? null, error: { code: -32001, message: "Session not found" } });
    }
    if (req.headers["mcp-protocol-version"] !== "2025-06-18") return reply(400, { jsonrpc: "2.0", id: msg.id ?? null, error: { code: -32000, message: "Bad MCP-Protocol-Version" } });
    if (msg.id === undefined) return reply(202);
    if (msg.method === "tools/list") {
      const start = msg.params?.cursor ? Number(msg.params.cursor) : 0;
      const page = tools.slice(start, start + pageSize);
      const next = start + pageSize < tools.length ? String(start + pageSize) : undefined;
      return reply(200, { jsonrpc: "2.0", id: msg.id, result: { tools: page, ...(next ? { nextCursor: next } : {}) } });
    }
    if (msg.method === "tools/call") {
      const { name, arguments: args = {} } = msg.params || {};
      const text = (t) => reply(200, { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: t }] } });
      switch (name) {
        case "echo":
          return text(`Echo: ${args.message}`);
        case "add":
          return text(String(Number(args.a) + Number(args.b)));
        case "fail":
          return reply(200, { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "the database is down" }], isError: true } });
        case "slow":
          await new Promise((r) => setTimeout(r, args.ms ?? 1000));
          if (res.destroyed) return;
          return text("finally");
        case "drop":
          entry.end = Date.now();
          return req.socket.destroy();
        case "garbage":
          entry.end = Date.now();
          res.writeHead(200, { "content-type": "application/json" });
          return res.end("<html>502 Bad Gateway</html>");
        default:
          return reply(200, { jsonrpc: "2.0", id: msg.id, error: { code: -32602, message: `Unknown tool: ${name}` } });
      }
    }
    return reply(200, { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  return {
    state,
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    requests: state.requests,
    calls: (method) => state.requests.filter((r) => r.method === method),
    reset: () => (state.requests.length = 0),
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(r);
      }),
  };
}
