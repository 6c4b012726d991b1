// End to end: Hearth as an MCP server (`POST /mcp/{agentId}`), driven by the
// official TypeScript SDK client (@modelcontextprotocol/sdk) over its
// Streamable HTTP transport, as Claude Desktop or Cursor would; keys of
// API_TOKENS without `owner` in threads of their own; session ids; CORS
// (and the SDK client in Chromium, from another origin); plus the refusals a
// raw client can provoke (wrong token, bad JSON-RPC).
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startHearth } from "./support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ADMIN = "mcp-server-admin-token";
const SITE = "site-key-token-0123456789";
const SHOP = "shop-key-token-0123456789";
let h;

before(async () => {
  h = await startHearth({
    bindings: { ADMIN_TOKEN: ADMIN, AGENTS: "main,work", API_TOKENS: `site:${SITE}:main,shop:${SHOP}:main` },
  });
  await h.putFile("agents/main/SOUL.md", "# Soul\nWarm and brief.");
  await h.putFile("agents/main/MEMORY.md", "Olga's locker code is 4512.");
});
after(async () => {
  await h?.close();
});

/** `fetch` for the SDK: its requests go to the Worker in workerd. */
function workerFetch(url, init = {}) {
  const headers = Object.fromEntries(new Headers(init.headers).entries());
  return h.mf.dispatchFetch(String(url), { method: init.method, headers, body: init.body }).then(
    async (r) => new Response(r.status === 202 || r.status === 204 ? null : await r.arrayBuffer(), { status: r.status, headers: Object.fromEntries(r.headers.entries()) }),
  );
}

async function connect({ token = ADMIN, agent = "main", seen } = {}) {
  const client = new Client({ name: "hearth-e2e", version: "1.0.0" });
  const fetchFn = seen ? (url, init) => (seen.push({ method: init?.method, headers: new Headers(init?.headers) }), workerFetch(url, init)) : workerFetch;
  const transport = new StreamableHTTPClientTransport(new URL(`http://hearth.test/mcp/${agent}`), {
    fetch: fetchFn,
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  client.transportForTest = transport;
  return client;
}

const text = (result) => result.content.map((c) => c.text).join("");

async function raw(body, { token = ADMIN, method = "POST", headers = {} } = {}) {
  const res = await h.fetch("/mcp/main", {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    ...(method === "POST" ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  const textBody = await res.text();
  let json = null;
  try {
    json = JSON.parse(textBody);
  } catch {}
  return { status: res.status, json, text: textBody, headers: res.headers };
}

describe("Hearth as an MCP server", () => {
  test("the SDK client connects, lists the tools and asks the agent", async () => {
    const client = await connect();
    try {
      assert.equal(client.getServerVersion().name, "hearth-main");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["ask_agent", "search_memory", "read_workspace_file"]);
      assert.deepEqual(tools[0].inputSchema.required, ["message"]);

      h.llm.push({ text: "Hello from your agent." });
      const answer = await client.callTool({ name: "ask_agent", arguments: { message: "Say hello to Claude Desktop." } });
      assert.equal(answer.isError, false);
      assert.equal(text(answer), "Hello from your agent.");
      // The turn ran in the owner's main session (the default thread), with no chat to send to.
      const status = await h.sessionStatus("agent:main:main");
      assert.ok(status.messages.some((m) => m.role === "user" && JSON.stringify(m.content).includes("Say hello to Claude Desktop.")));
      assert.equal(h.telegram.sent().length, 0, "nothing was sent to a chat");
      const req = h.llm.requests.at(-1);
      assert.ok(req.raw.includes("locker code"), "the main session sees the owner's MEMORY.md");

      // Another thread is a conversation of its own.
      h.llm.push({ text: "Work thread here." });
      const work = await client.callTool({ name: "ask_agent", arguments: { message: "hi", thread: "work-notes" } });
      assert.equal(text(work), "Work thread here.");
      const thread = await h.sessionStatus("agent:main:api:work-notes");
      assert.equal(thread.messageCount, 2);
      assert.ok(!h.llm.requests.at(-1).raw.includes("locker code"), "another thread does not see the owner's private files");
    } finally {
      await client.close();
    }
  });

  test("the SDK client searches the memory and reads workspace files", async () => {
    const ns = h.mf.getDurableObjectNamespace("AGENT");
    const agent = (await ns).get((await ns).idFromName("main"));
    const add = await agent.fetch("https://agent/memory/op?agent=main", {
      method: "POST",
      body: JSON.stringify({ store: "main", op: { op: "add", name: "coffee", content: "Olga drinks flat whites", kind: "note", created_at: 1 } }),
    });
    assert.equal(add.status, 200, await add.clone().text());
    const client = await connect();
    try {
      const found = await client.callTool({ name: "search_memory", arguments: { query: "flat white coffee" } });
      assert.equal(found.isError, false);
      assert.match(text(found), /flat whites/);
      const soul = await client.callTool({ name: "read_workspace_file", arguments: { path: "SOUL.md" } });
      assert.equal(text(soul), "# Soul\nWarm and brief.");
      const listing = await client.callTool({ name: "read_workspace_file", arguments: { path: "" } });
      assert.match(text(listing), /MEMORY\.md/);
      const escape = await client.callTool({ name: "read_workspace_file", arguments: { path: "../other/SOUL.md" } });
      assert.equal(escape.isError, true);
      const unknown = await client.callTool({ name: "read_workspace_file", arguments: { path: "nope.md" } });
      assert.equal(unknown.isError, true);
      await assert.rejects(client.callTool({ name: "delete_everything", arguments: {} }), /Unknown tool/);
    } finally {
      await client.close();
    }
  });

  test("a wrong or missing token is 401, and no agent id leaks before it", async () => {
    await assert.rejects(connect({ token: "wrong" }), (e) => e.code === 401 && /bearer token/.test(e.message));
    const wrong = await raw({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { token: "wrong" });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get("www-authenticate") || "", /Bearer/);
    const none = await h.fetch("/mcp/main", { method: "POST", body: "{}" });
    assert.equal(none.status, 401);
    const unknownAgent = await raw({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { token: "wrong", headers: {} });
    assert.equal(unknownAgent.status, 401);
    const unknown = await h.fetch("/mcp/nobody", { method: "POST", headers: { authorization: `Bearer ${ADMIN}` }, body: "{}" });
    assert.equal(unknown.status, 404);
  });

  test("bad JSON-RPC gets JSON-RPC errors, never a 500", async () => {
    const cases = [
      ["{not json", 400, -32700],
      ["[]", 400, -32600],
      ['"hello"', 400, -32600],
      [{ id: 1, method: "tools/list" }, 400, -32600],
      [{ jsonrpc: "2.0", id: 1, method: "resources/list" }, 200, -32601],
      [{ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "nope" } }, 200, -32602],
      [{ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: {} } }, 200, -32602],
    ];
    for (const [body, status, code] of cases) {
      const r = await raw(body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json?.jsonrpc, "2.0", r.text);
      assert.equal(r.json.error.code, code, r.text);
    }
    const badVersion = await raw({ jsonrpc: "2.0", id: 1, method: "ping" }, { headers: { "mcp-protocol-version": "1999-01-01" } });
    assert.equal(badVersion.status, 400);
    assert.equal(badVersion.json.error.code, -32600);
    const note = await raw({ jsonrpc: "2.0", method: "notifications/initialized" });
    assert.equal(note.status, 202);
    assert.equal(note.text, "");
    const get = await raw(null, { method: "GET" });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST, OPTIONS");
    const big = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(1_100_000) } }));
    assert.equal(big.status, 413);
    assert.equal(big.json.error.code, -32600);
  });
});

describe("keys of API_TOKENS, sessions and CORS", () => {
  test("a key without owner gets threads of its own, never the owner's main session or private memory", async () => {
    const site = await connect({ token: SITE });
    const shop = await connect({ token: SHOP });
    try {
      const { tools } = await site.listTools();
      assert.match(tools.find((t) => t.name === "ask_agent").description, /separate conversation of your key/);
      h.llm.push({ text: "Hello, site." });
      const answer = await site.callTool({ name: "ask_agent", arguments: { message: "Hi from the site key." } });
      assert.equal(answer.isError, false, text(answer));
      assert.equal(text(answer), "Hello, site.");
      const own = await h.sessionStatus("agent:main:api:key-site-mcp");
      assert.ok(own.messages.some((m) => JSON.stringify(m.content).includes("Hi from the site key.")), "the key's default thread");
      const main = await h.sessionStatus("agent:main:main");
      assert.ok(!main.messages.some((m) => JSON.stringify(m.content).includes("Hi from the site key.")), "not the owner's main session");
      assert.ok(!h.llm.requests.at(-1).raw.includes("locker code"), "the owner's MEMORY.md stays out");

      // Another key naming the same thread talks in another conversation.
      h.llm.push({ text: "Hello, shop." });
      await shop.callTool({ name: "ask_agent", arguments: { message: "Hi from the shop.", thread: "mcp" } });
      const shopThread = await h.sessionStatus("agent:main:api:key-shop-mcp");
      assert.equal(shopThread.messageCount, 2);
      assert.equal((await h.sessionStatus("agent:main:api:key-site-mcp")).messageCount, 2, "the site's thread is untouched");

      const refused = await site.callTool({ name: "ask_agent", arguments: { message: "let me in", thread: "main" } });
      assert.equal(refused.isError, true);
      assert.match(text(refused), /owner's private conversation/);
      const memory = await site.callTool({ name: "read_workspace_file", arguments: { path: "MEMORY.md" } });
      assert.equal(memory.isError, true);
      assert.ok(!text(memory).includes("4512"));
      const search = await site.callTool({ name: "search_memory", arguments: { query: "flat white coffee" } });
      assert.ok(!text(search).includes("flat whites"), `the owner's notes are not the key's: ${text(search)}`);
    } finally {
      await site.close();
      await shop.close();
    }
  });

  test("initialize gives an Mcp-Session-Id the SDK sends back; another key's id is 404; DELETE is 405", async () => {
    const seen = [];
    const client = await connect({ token: SITE, seen });
    try {
      const id = client.transportForTest.sessionId;
      assert.match(id ?? "", /^hs1\.\d+\.[0-9a-f]+\.[0-9a-f]{32}$/, `session id: ${id}`);
      await client.listTools();
      const after = seen.filter((r) => r.method === "POST").slice(1);
      assert.ok(after.length >= 2 && after.every((r) => r.headers.get("mcp-session-id") === id), "every request after initialize carries it");
      // The same id with other credentials, or a made-up one: not a session here.
      const list = { jsonrpc: "2.0", id: 9, method: "tools/list" };
      const stolen = await raw(list, { token: SHOP, headers: { "mcp-session-id": id } });
      assert.equal(stolen.status, 404);
      assert.equal(stolen.json.error.code, -32001);
      assert.equal((await raw(list, { token: SITE, headers: { "mcp-session-id": "hs1.1.ab.cd" } })).status, 404);
      assert.equal((await raw(list, { token: SITE, headers: { "mcp-session-id": id } })).status, 200);
      // Ending a session: nothing to end, and the SDK accepts the 405.
      await client.transportForTest.terminateSession();
      assert.equal(seen.at(-1).method, "DELETE");
    } finally {
      await client.close();
    }
  });

  test("CORS: a preflight is answered without credentials, and every answer lets a browser read it", async () => {
    const pre = await h.fetch("/mcp/main", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type, mcp-protocol-version, mcp-session-id" },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), "*");
    assert.match(pre.headers.get("access-control-allow-methods"), /POST/);
    for (const name of ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id"]) {
      assert.match(pre.headers.get("access-control-allow-headers"), new RegExp(name));
    }
    const init = await raw({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } } });
    assert.equal(init.headers.get("access-control-allow-origin"), "*");
    assert.match(init.headers.get("access-control-expose-headers"), /mcp-session-id/);
    assert.ok(init.headers.get("mcp-session-id"));
    const denied = await raw({ jsonrpc: "2.0", id: 1, method: "ping" }, { token: "wrong" });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get("access-control-allow-origin"), "*", "errors are readable too");
  });
});

// The SDK client in a real browser, on a page of another origin: the
// browser's own CORS checks decide whether it may call the server and read
// the session id.
const BROWSERS = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter(Boolean);
const browserPath = BROWSERS.find((p) => fs.existsSync(p));

describe("the SDK client in Chromium, from another origin", { skip: browserPath ? false : `no Chromium (looked at ${BROWSERS.join(", ")})` }, () => {
  let browser;
  let page;
  let site;
  before(async () => {
    const bundle = await esbuild.build({
      stdin: {
        contents: `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
window.mcp = { Client, StreamableHTTPClientTransport };`,
        resolveDir: ROOT,
        loader: "js",
      },
      bundle: true,
      format: "iife",
      platform: "browser",
      write: false,
      logLevel: "error",
    });
    const js = bundle.outputFiles[0].text;
    site = http.createServer((req, res) => {
      if (req.url === "/mcp.js") return res.writeHead(200, { "content-type": "text/javascript" }).end(js);
      res.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><title>app</title><script src="/mcp.js"></script>');
    });
    await new Promise((r) => site.listen(0, "127.0.0.1", r));
    const { default: puppeteer } = await import("puppeteer-core");
    browser = await puppeteer.launch({
      executablePath: browserPath,
      headless: true,
      userDataDir: fs.mkdtempSync(path.join(os.tmpdir(), "hearth-mcp-chromium-")),
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"],
    });
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${site.address().port}/`);
    await page.waitForFunction(() => window.mcp);
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => (site ? site.close(r) : r()));
  });

  test("connects, lists the tools, asks the agent and reads its session id", async () => {
    h.llm.push({ text: "Hello, browser." });
    const url = new URL("/mcp/main", h.address).toString();
    const got = await page.evaluate(async (url, token) => {
      const { Client, StreamableHTTPClientTransport } = window.mcp;
      const client = new Client({ name: "browser-app", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      const { tools } = await client.listTools();
      const answer = await client.callTool({ name: "ask_agent", arguments: { message: "Hi from a web page." } });
      const out = { origin: location.origin, tools: tools.map((t) => t.name), answer: answer.content.map((c) => c.text).join(""), sessionId: transport.sessionId };
      await client.close();
      return out;
    }, url, SITE);
    assert.notEqual(got.origin, new URL(h.address).origin, "a page of another origin");
    assert.deepEqual(got.tools, ["ask_agent", "search_memory", "read_workspace_file"]);
    assert.equal(got.answer, "Hello, browser.");
    assert.match(got.sessionId ?? "", /^hs1\./, "the exposed header reached the script");
  });
});
