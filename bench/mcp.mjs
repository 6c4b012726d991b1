// Bench rows for MCP: requests to an MCP server per turn once its tool list
// is cached (turns of a session, and a new session), and the time one MCP
// tool call adds to a turn beyond the server's own time. Measured in workerd
// with the MCP stand-in and the LLM stand-in in this process, on one clock:
// Hearth's time for a call is the gap between the model's tool call and the
// next model request, less the time the server took to answer. The call goes
// through an API thread (Hearth's own MCP server, `ask_agent`), so no chat
// API sits in that gap.
import http from "node:http";
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { startMcpStandin } from "../tests/support/mcp.mjs";
import { percentile } from "../tests/support/stats.mjs";

const ADMIN = "bench-admin";

async function askAgent(h, message, id) {
  const res = await h.fetch("/mcp/main", {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "ask_agent", arguments: { message, thread: "bench" } } }),
  });
  const body = await res.json();
  if (body.error || body.result?.isError) throw new Error(`ask_agent failed: ${JSON.stringify(body)}`);
  return body.result;
}

export async function bench() {
  const mcp = await startMcpStandin({ sse: false });
  // A page for web_fetch: a built-in tool making one HTTP request, like an MCP call.
  const pageHits = [];
  const page = http.createServer((req, res) => {
    const hit = { start: Date.now() };
    pageHits.push(hit);
    res.writeHead(200, { "content-type": "text/plain" });
    hit.end = Date.now();
    res.end("ok");
  });
  await new Promise((r) => page.listen(0, "127.0.0.1", r));
  const pageUrl = `http://127.0.0.1:${page.address().port}/`;
  const h = await startHearth({ bindings: { ADMIN_TOKEN: ADMIN, MCP_TIMEOUT_MS: "5000", WEB_FETCH_ALLOW_HOSTS: `127.0.0.1:${page.address().port}` } });
  try {
    await h.putFile("agents/main/mcp.json", JSON.stringify({ mcpServers: { bench: { url: mcp.url, scopes: ["main", "api"] } } }));
    // Warm-up: the first turn lists the server (the Agent object caches it).
    const turn = async (text) => {
      const before = h.telegram.sent().length;
      await h.sendUpdate(tgUpdate({ from: OWNER, text }));
      await h.until(() => h.telegram.sent().length > before, { timeoutMs: 20000 });
    };
    await turn("warm up");
    const turns = 20;
    mcp.reset();
    for (let i = 0; i < turns; i++) await turn(`turn ${i}`);
    const perTurn = mcp.requests.length / turns;
    mcp.reset();
    await turn("/reset");
    await turn("a new session");
    const newSession = mcp.requests.length;

    // The gap between the model's tool call and its next request: for a
    // built-in tool that does no I/O (load_skill of a missing skill), and for
    // an MCP tool, less the server's time. The difference is what the MCP
    // call adds (encoding, the HTTP exchange from workerd, reading the answer).
    let id = 1;
    await askAgent(h, "warm", id++);
    const gapsFor = async (toolCall, n = 40) => {
      const gaps = [];
      for (let i = 0; i < n; i++) {
        h.llm.push({ toolCall }, { text: "ok" });
        const firstLlm = h.llm.requests.length;
        mcp.reset();
        pageHits.length = 0;
        await askAgent(h, `call ${i}`, id++);
        const [callReq, nextReq] = h.llm.requests.slice(firstLlm, firstLlm + 2);
        if (!callReq || !nextReq) throw new Error("the tool call did not happen");
        const served = mcp.requests.find((r) => r.method === "tools/call") || pageHits[0];
        if (toolCall.name.startsWith("mcp__") && !served) throw new Error("the MCP server was not called");
        if (i >= 5) gaps.push(nextReq.start - callReq.end - (served ? served.end - served.start : 0));
      }
      return gaps.sort((a, b) => a - b);
    };
    const builtin = await gapsFor({ name: "load_skill", input: { name: "no-such-skill" } });
    const fetched = await gapsFor({ name: "web_fetch", input: { url: pageUrl } });
    const gaps = await gapsFor({ name: "mcp__bench__echo", input: { message: "hi" } });
    const p50 = (g) => percentile(g, 50);
    return [
      { name: `MCP requests per turn, tool list cached (${turns} turns of a session)`, value: perTurn.toFixed(2), target: "0" },
      { name: "MCP requests when a new session starts (Agent object's cache warm)", value: String(newSession), target: "0" },
      { name: `tool round, built-in tool without I/O: model's call → next model request (n=${builtin.length})`, value: `p50 ${percentile(builtin, 50)} ms, p99 ${percentile(builtin, 99)} ms` },
      { name: `tool round, web_fetch of a local page, the page's time subtracted (n=${fetched.length})`, value: `p50 ${p50(fetched)} ms, p99 ${percentile(fetched, 99)} ms` },
      { name: `tool round, MCP tool, the server's time subtracted (n=${gaps.length})`, value: `p50 ${p50(gaps)} ms, p99 ${percentile(gaps, 99)} ms` },
      {
        name: "one MCP tool call: Hearth's time above the server's (p50 MCP round − p50 no-I/O round; − p50 web_fetch round: the MCP client's own work without the HTTP exchange)",
        value: `${p50(gaps) - p50(builtin)} ms; ${p50(gaps) - p50(fetched)} ms`,
        target: "≤ 3 ms",
      },
    ];
  } finally {
    await h.close();
    await mcp.close();
    await new Promise((r) => page.close(r));
  }
}
