// End to end: run_code in workerd. The model (the LLM stand-in) writes a
// script; it runs in a fresh isolate from the Worker Loader binding, calls
// Hearth's tools through the `hearth` object, and its value, console and
// calls come back as the tool's result. The red-team list of escapes runs in
// tests/codemode-redteam.test.mjs.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { runCode, toolResults } from "./support/codemode.mjs";
import { sseReader } from "./support/sse.mjs";

const ADMIN = "codemode-admin";
const SECRETS = ["test-llm-key", "test-webhook-secret", "123456:TEST-TOKEN", ADMIN];

let h, site;
before(async () => {
  const hits = [];
  site = http.createServer((req, res) => {
    hits.push(req.url);
    res.end("reached");
  });
  await new Promise((r) => site.listen(0, "127.0.0.1", r));
  site.hits = hits;
  h = await startHearth({ loader: true, bindings: { ADMIN_TOKEN: ADMIN } });
});
after(async () => {
  await h?.close();
  await new Promise((r) => site.close(r));
});
beforeEach(() => h.reset());

describe("run_code", () => {
  test("arithmetic and data work come back as JSON, with the console", async () => {
    const { result, requests } = await runCode(
      h,
      `const primes = [];
for (let n = 2; primes.length < 10; n++) {
  if (primes.every((p) => n % p !== 0)) primes.push(n);
}
const counts = {};
for (const w of "the cat and the hat and the bat".split(" ")) counts[w] = (counts[w] ?? 0) + 1;
console.log("primes", primes.length);
return { primes, sum: primes.reduce((a, b) => a + b, 0), counts };`,
    );
    assert.equal(result.isError, false, result.text);
    assert.match(
      result.text,
      /^Result \(JSON\): \{"primes":\[2,3,5,7,11,13,17,19,23,29\],"sum":129,"counts":\{"the":3,"cat":1,"and":2,"hat":1,"bat":1\}\}\nConsole \(1 lines\):\nprimes 10\nRan in \d+ ms, \d+ steps\.$/,
    );
    assert.equal(requests.length, 2, "one model call writes the script, one answers");
    const spec = requests[0].body.tools.find((t) => t.name === "run_code");
    assert.ok(spec, "the owner's session has run_code");
    assert.match(spec.description, /hearth\.read_file\(path\)/);
    assert.match(spec.description, /hearth\.write_file\(path, content\)/);
    assert.match(spec.description, /hearth\.memory_search\(query, k\?, queries\?, since\?, until\?\)/);
    assert.match(spec.description, /hearth\.web_fetch\(url/);
    assert.ok(!spec.description.includes("hearth.run_code"), "a script cannot start another");
  });

  test("an ES module with a default export runs too", async () => {
    const { result } = await runCode(h, `export default async function (hearth) {\n  return typeof hearth.read_file;\n}`);
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^Result \(JSON\): "function"/);
  });

  test("ten reads in one script: one tool round instead of ten", async () => {
    for (let i = 1; i <= 10; i++) await h.putFile(`agents/main/notes/n${i}.md`, `note ${i}: ${i * i}`);
    const { result, requests } = await runCode(
      h,
      `const texts = await Promise.all(Array.from({ length: 10 }, (_, i) => hearth.read_file("notes/n" + (i + 1) + ".md")));
return texts.map((t) => Number(t.split(": ")[1])).reduce((a, b) => a + b, 0);`,
    );
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^Result \(JSON\): 385\n/);
    assert.match(result.text, /Tool calls \(10\):\n1\. read_file \{"path":"notes\/n1\.md"\} → ok, 9 chars/);
    assert.equal(requests.length, 2);
    // The calls are in the history, in the run_code result.
    const status = await h.sessionStatus("agent:main:main");
    const stored = status.messages.filter((m) => m.role === "toolResult" && m.toolName === "run_code").pop();
    assert.match(JSON.stringify(stored.content), /Tool calls \(10\)/);
  });

  test("each call of a script is shown to the turn's watchers like a tool call", async () => {
    await h.putFile("agents/main/notes/a.md", "A");
    h.llm.push({ toolCall: { name: "run_code", input: { code: `return [await hearth.read_file("notes/a.md"), await hearth.read_file("nope.md").catch((e) => e.message)]` } } });
    h.llm.push({ text: "read them" });
    const res = await h.fetch("/api/agents/main/stream", {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "read" }], threadId: "main" }),
    });
    const sse = sseReader(res);
    await sse.until((e) => e.event === "done");
    const tools = sse.events.filter((e) => e.event === "tool").map((e) => `${e.json.name} ${e.json.status}`);
    assert.deepEqual(tools, ["run_code running", "read_file running", "read_file done", "read_file running", "read_file error", "run_code done"]);
    const result = toolResults(h.llm.requests.at(-1)).at(-1);
    assert.match(result.text, /^Result \(JSON\): \["A","read_file: nope\.md does not exist"\]/);
  });

  test("an endless loop is stopped at the limit, and the session answers the next message", async () => {
    const t0 = Date.now();
    const { result } = await runCode(h, `let n = 0;\nwhile (true) { n++ }`);
    assert.equal(result.isError, true);
    assert.match(result.text, /^Error: stopped: the script (ran more than 50000000 steps \(an endless loop\?\)|computed for more than 1000 ms) \(limits: 50000000 steps, 1000 ms of computing, 10000 ms in all\) \(line 2: while \(true\) \{ n\+\+ \}\)/);
    assert.ok(Date.now() - t0 < 8000, `stopped after ${Date.now() - t0} ms`);
    const sent = h.telegram.sent().length;
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "still there?" }));
    await h.telegram.untilSent(sent + 1, { timeoutMs: 10000 });
    assert.equal(h.telegram.sent().at(-1).body.text, "echo: still there?");
  });

  test("a loop that catches the stop cannot go on, nor can recursion", async () => {
    for (const code of [
      `for (;;) { try { while (true) {} } catch (e) {} }`,
      `function f() { try { f() } catch { f() } }\nf()`,
      `const f = (n) => n === 0 ? 1 : f(n - 1) + f(n - 1);\nreturn f(60)`,
      `const a = [1];\nfor (const x of a) a.push(x)`,
    ]) {
      const { result } = await runCode(h, code);
      assert.equal(result.isError, true, code);
      assert.match(result.text, /^Error: stopped: /, code);
    }
  });

  test("fetch is refused and nothing is sent", async () => {
    const { result } = await runCode(h, `return await fetch("http://127.0.0.1:${site.address().port}/leak?x=1").then((r) => r.text())`);
    assert.equal(result.isError, true);
    assert.match(result.text, /not permitted to access the internet/);
    assert.deepEqual(site.hits, []);
  });

  test("env and globalThis hold nothing of Hearth's", async () => {
    const { result } = await runCode(
      h,
      `const names = Object.getOwnPropertyNames(globalThis);
const strings = [];
const seen = new Set();
function walk(v, depth) {
  if (depth > 3 || v === null || seen.has(v)) return;
  if (typeof v === "string") { strings.push(v); return; }
  if (typeof v !== "object" && typeof v !== "function") return;
  seen.add(v);
  for (const k of Object.getOwnPropertyNames(v)) {
    try { walk(v[k], depth + 1) } catch {}
  }
}
walk(globalThis, 0);
return { names, strings, env: typeof env, process: typeof process, caches: typeof caches, self: typeof self.env };`,
    );
    assert.equal(result.isError, false, result.text);
    const value = JSON.parse(result.text.match(/^Result \(JSON\): (.*)$/m)[1]);
    for (const secret of SECRETS) assert.ok(!result.text.includes(secret), `${secret} reached the sandbox`);
    for (const name of ["BUCKET", "SESSION", "AGENT", "GATEWAY", "LOADER", "LLM_API_KEY", "TELEGRAM_BOT_TOKEN", "ADMIN_TOKEN", "__worker_init_state"]) {
      assert.ok(!value.names.includes(name), `${name} is a global of the sandbox`);
    }
    assert.deepEqual([value.env, value.process, value.caches, value.self], ["undefined", "undefined", "undefined", "undefined"]);
  });

  test("a huge value is cut, with a note", async () => {
    const { result } = await runCode(h, `console.log("big"); return "x".repeat(1000000)`);
    assert.equal(result.isError, false);
    assert.match(result.text, /\[the result was 1000002 characters of JSON; cut to the first 16000: return less, or a summary\]/);
    assert.ok(result.text.length < 17000, `${result.text.length} characters`);
    const many = await runCode(h, `for (let i = 0; i < 5000; i++) console.log("line", i); return 1`);
    assert.match(many.result.text, /Console \(100 lines\):\nline 0\n/);
    assert.match(many.result.text, /\[4900 more console lines not kept\]/);
  });

  test("a script that throws: the message and the line, as the tool's error", async () => {
    const thrown = await runCode(h, `const a = 1;\nconst b = null;\nreturn b.x;`);
    assert.equal(thrown.result.isError, true);
    assert.equal(thrown.result.text.split("\n")[0], "Error: TypeError: Cannot read properties of null (reading 'x') (line 3: return b.x;)");
    const syntax = await runCode(h, `let a = 1;\nreturn a + ;`);
    assert.equal(syntax.result.text.split("\n")[0], "Error: SyntaxError: Unexpected token ';' (line 2: return a + ;)");
    const tool = await runCode(h, `return await hearth.read_file("missing.md")`);
    assert.equal(tool.result.text.split("\n")[0], "Error: Error: read_file: missing.md does not exist (line 1: return await hearth.read_file(\"missing.md\"))");
    const refused = await runCode(h, `import fs from "node:fs"`);
    assert.match(refused.result.text, /^the script was not run: line 1: `import` is not available/);
    // The turn went on: the model was told and answered.
    assert.equal(h.telegram.sent().at(-1).body.text, "done");
  });

  test("writes go through write_file's guards, and the workspace sees them at once", async () => {
    const { result } = await runCode(
      h,
      `await hearth.write_file("notes/from-script.md", "written by a script");
const bad = await hearth.write_file("../escape.md", "x").catch((e) => e.message);
return [await hearth.read_file("notes/from-script.md"), bad, (await hearth.read_file("notes/")).includes("from-script.md")];`,
    );
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^Result \(JSON\): \["written by a script","write_file: path may not contain '\.\.'.*",true\]/);
    const bucket = await h.bucket();
    assert.equal(await (await bucket.get("agents/main/notes/from-script.md")).text(), "written by a script");
    assert.equal(await bucket.get("agents/escape.md"), null);
  });

  test("the owner asks how many daily notes this month mention coffee: one script answers", async () => {
    const month = new Date().toISOString().slice(0, 7);
    const last = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 2, 15)).toISOString().slice(0, 7);
    const notes = {
      [`${month}-01`]: "Slept badly. Two coffees before noon.",
      [`${month}-02`]: "Long walk by the river.",
      [`${month}-03`]: "Met Sam for COFFEE at the corner place.",
      [`${month}-04`]: "Tea only today.",
      [`${month}-05`]: "Bought a new coffee grinder.",
      [`${last}-28`]: "Coffee with the team (last month).",
    };
    for (const [day, text] of Object.entries(notes)) await h.putFile(`agents/main/memory/${day}.md`, `# ${day}\n\n${text}\n`);
    const script = `const month = new Date().toISOString().slice(0, 7);
const names = (await hearth.read_file("memory/")).split("\\n").map((line) => line.split(" ")[0]);
const thisMonth = names.filter((n) => n.startsWith(month) && n.endsWith(".md"));
const texts = await Promise.all(thisMonth.map((n) => hearth.read_file("memory/" + n)));
const mention = thisMonth.filter((n, i) => /coffee/i.test(texts[i]));
return { month, notes: thisMonth.length, mention: mention.length, days: mention };`;
    const sent = h.telegram.sent().length;
    const first = h.llm.requests.length;
    h.llm.push({ toolCall: { name: "run_code", input: { code: script } } });
    h.llm.state.responder = (body) => {
      // Only the request that carries this script's result (the last message).
      const r = toolResults({ body: { messages: body.messages.slice(-1) } }).at(-1);
      if (!r || !r.text.startsWith("Result")) return null;
      const v = JSON.parse(r.text.match(/^Result \(JSON\): (.*)$/m)[1]);
      return { text: `${v.mention} of your ${v.notes} daily notes this month mention coffee (${v.days.join(", ")}).` };
    };
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "how many of my daily notes this month mention coffee?" }));
    await h.telegram.untilSent(sent + 1, { timeoutMs: 20000 });
    const requests = h.llm.requests.slice(first);
    assert.equal(requests.length, 2, "one call writes the script, one answers");
    assert.equal(
      h.telegram.sent().at(-1).body.text,
      `3 of your 5 daily notes this month mention coffee (${month}-01.md, ${month}-03.md, ${month}-05.md).`,
    );
    const result = toolResults(requests[1]).at(-1);
    assert.match(result.text, /Tool calls \(6\):\n1\. read_file \{"path":"memory\/"\}/);
  });
});

describe("who gets run_code", () => {
  test("not someone else's DM by default", async () => {
    h.llm.push({ text: "hi" });
    const sent = h.telegram.sent().length;
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "hello" }));
    await h.telegram.untilSent(sent + 1, { timeoutMs: 10000 });
    assert.ok(!h.llm.requests.at(-1).body.tools.some((t) => t.name === "run_code"));
  });

  test("CODE_MODE=all opens it, with that session's tools and privacy; no loader, no tool", async () => {
    const open = await startHearth({ loader: true, bindings: { CODE_MODE: "all" } });
    const none = await startHearth();
    try {
      await open.putFile("agents/main/MEMORY.md", "the owner's private memory");
      const { result, requests } = await runCode(
        open,
        `const tried = {};
for (const path of ["MEMORY.md", "memory/", "sessions/"]) tried[path] = await hearth.read_file(path).catch((e) => e.message);
return { tried, tools: Object.keys(hearth) };`,
        { from: FRIEND },
      );
      assert.equal(result.isError, false, result.text);
      assert.ok(!result.text.includes("the owner's private memory"));
      const value = JSON.parse(result.text.match(/^Result \(JSON\): (.*)$/m)[1]);
      for (const path of ["MEMORY.md", "memory/", "sessions/"]) assert.match(value.tried[path], /cannot be read here/, path);
      assert.ok(value.tools.includes("read_file") && !value.tools.includes("write_file") && !value.tools.includes("session_logs"), value.tools.join());
      const spec = requests[0].body.tools.find((t) => t.name === "run_code");
      assert.ok(spec && !spec.description.includes("write_file"));

      none.llm.push({ text: "hi" });
      await none.sendUpdate(tgUpdate({ from: OWNER, text: "hello" }));
      await none.telegram.untilSent(1, { timeoutMs: 10000 });
      assert.ok(!none.llm.requests[0].body.tools.some((t) => t.name === "run_code"), "without a Worker Loader binding");
    } finally {
      await open.close();
      await none.close();
    }
  });
});
