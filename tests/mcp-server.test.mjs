// End to end: Hearth as an MCP server (`POST /mcp/{agentId}`), driven by the
// official TypeScript SDK client (@modelcontextprotocol/sdk) over its
// Streamable HTTP transport, as Claude Desktop or Cursor would; plus the
// refusals a raw client can provoke (wrong token, bad JSON-RPC).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startHearth } from "./helpers/hearth.mjs";

const ADMIN = "mcp-server-admin-token";
let h;

before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, AGENTS: "main,work" } });
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

async function connect({ token = ADMIN, agent = "main" } = {}) {
  const client = new Client({ name: "hearth-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://hearth.test/mcp/${agent}`), {
    fetch: workerFetch,
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
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
    assert.equal(get.headers.get("allow"), "POST");
    const big = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(1_100_000) } }));
    assert.equal(big.status, 413);
    assert.equal(big.json.error.code, -32600);
  });
});
