// The web console's server side, on its own in workerd: the pages are
// static assets with a strict CSP, login sets a signed HttpOnly cookie that
// the admin API takes as the owner, cookie writes need same-origin and
// X-Hearth-Console, and the workspace routes by layer (list with source,
// get, put, delete; bad input named; pinned writes refused, seed 001).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FRIEND, startHearth, tgUpdate } from "./support/hearth.mjs";

const ADMIN = "console-admin-token-0123";
const ORIGIN = "http://hearth.test";
const bearer = { authorization: `Bearer ${ADMIN}` };
// A key for the agent main that is not the owner's: it must not browse memory.
const SITE_KEY = "site-key-0123456789abcdef";
const bindings = { ADMIN_TOKEN: ADMIN, AGENTS: "main,work", TEMPLATE: "concierge", API_TOKENS: `site:${SITE_KEY}:main` };

let h;
let cookie;
before(async () => {
  h = await startHearth({ bindings, assets: true });
  await h.putFile("_catalog/defaults/workspace/SOUL.md", "Default soul");
  await h.putFile("_catalog/defaults/workspace/USER.md", "Default user");
  await h.putFile("_catalog/concierge/workspace/IDENTITY.md", "- **Name:** Conci");
  await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Guard v1");
  await h.putFile("agents/main/notes/a.md", "a note");
});
after(() => h.close());

const login = (token, headers = { origin: ORIGIN, "x-hearth-console": "1" }) =>
  h.fetch("/console/login", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ token }) });
const withCookie = (init = {}, write = true) => ({
  ...init,
  headers: { cookie, ...(write ? { origin: ORIGIN, "x-hearth-console": "1" } : {}), ...(init.headers ?? {}) },
});

describe("serving", () => {
  test("the console is a static page with a strict CSP; /api still reaches the Worker", async () => {
    const r = await h.fetch("/console/");
    assert.equal(r.status, 200);
    const html = await r.text();
    assert.match(html, /<script type="module" src="\/console\/app.js">/);
    assert.doesNotMatch(html, /<script>(?!<)/, "no inline script");
    const csp = r.headers.get("content-security-policy");
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    const js = await h.fetch("/console/app.js");
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type"), /javascript/);
    assert.equal((await h.fetch("/health")).status, 200);
    assert.equal((await h.fetch("/api/agents")).status, 401);
  });
});

describe("login", () => {
  test("a wrong token, a missing origin or header is refused, with the reason", async () => {
    const wrong = await login("nope");
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get("set-cookie"), null);
    const noOrigin = await login(ADMIN, { "x-hearth-console": "1" });
    assert.equal(noOrigin.status, 403);
    assert.match((await noOrigin.json()).error, /Origin/);
    const noHeader = await login(ADMIN, { origin: ORIGIN });
    assert.equal(noHeader.status, 403);
    assert.match((await noHeader.json()).error, /X-Hearth-Console/);
    const bad = await h.fetch("/console/login", { method: "POST", headers: { origin: ORIGIN, "x-hearth-console": "1" }, body: "token" });
    assert.equal(bad.status, 400);
  });

  test("the right token sets a signed HttpOnly, Secure, SameSite=Strict cookie (not the token)", async () => {
    const r = await login(ADMIN);
    assert.equal(r.status, 200);
    const set = r.headers.get("set-cookie");
    for (const part of ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"]) assert.ok(set.includes(part), `${set} lacks ${part}`);
    assert.ok(!set.includes(ADMIN), "the cookie is not the token");
    cookie = set.split(";")[0];
    assert.match(cookie, /^hearth_console=v1\.\d+\.[0-9a-f]{64}$/);
  });

  test("the cookie is the owner on the admin API; a tampered one is refused", async () => {
    const r = await h.fetch("/api/agents", withCookie({}, false));
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), ["main", "work"]);
    assert.equal((await h.fetch("/api/agents/main/schedule", withCookie({}, false))).status, 200);
    const forged = cookie.replace(/.$/, (c) => (c === "0" ? "1" : "0"));
    const refused = await h.fetch("/api/agents", { headers: { cookie: forged } });
    assert.equal(refused.status, 401);
    assert.match((await refused.json()).error, /log in again/);
  });

  test("writes with the cookie need same origin and X-Hearth-Console", async () => {
    const path = "/api/agents/main/workspace/notes/b.md";
    const noHeader = await h.fetch(path, { method: "PUT", headers: { cookie, origin: ORIGIN }, body: "x" });
    assert.equal(noHeader.status, 403);
    const cross = await h.fetch(path, { method: "PUT", headers: { cookie, origin: "https://evil.example", "x-hearth-console": "1" }, body: "x" });
    assert.equal(cross.status, 403);
    assert.match((await cross.json()).error, /evil\.example/);
    assert.equal(await (await h.bucket()).get("agents/main/notes/b.md"), null, "nothing written");
    const ok = await h.fetch(path, withCookie({ method: "PUT", body: "b" }));
    assert.equal(ok.status, 200);
    // A bearer token needs no CSRF header (not a browser's ambient credential).
    assert.equal((await h.fetch(path, { method: "DELETE", headers: bearer })).status, 200);
  });

  test("the cookie streams a chat as the owner, with the thread main", async () => {
    h.llm.push({ text: "Hello from the console." });
    const r = await h.fetch("/api/agents/main/stream", withCookie({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], threadId: "main" }),
    }));
    assert.equal(r.status, 200);
    const text = await r.text();
    assert.match(text, /event: done/);
    assert.match(text, /Hello from the console\./);
  });

  test("logout clears the cookie", async () => {
    const r = await h.fetch("/console/logout", withCookie({ method: "POST" }));
    assert.equal(r.status, 200);
    assert.match(r.headers.get("set-cookie"), /hearth_console=; .*Max-Age=0/);
  });
});

describe("workspace routes by layer", () => {
  const api = async (method, path, body, query = "") => {
    const r = await h.fetch(`${path}${query}`, { method, headers: bearer, body });
    const type = r.headers.get("content-type") ?? "";
    return { status: r.status, body: type.includes("json") ? await r.json() : await r.text() };
  };

  test("the agent's tree lists every resolved file with its source, its pins and skills", async () => {
    const r = await api("GET", "/api/agents/main/workspace");
    assert.equal(r.status, 200);
    const by = Object.fromEntries(r.body.files.map((f) => [f.path, f]));
    assert.equal(by["SOUL.md"].source, "defaults");
    assert.equal(by["IDENTITY.md"].source, "template");
    assert.equal(by["GUARDRAILS.md"].source, "pinned");
    assert.equal(by["GUARDRAILS.md"].pinned, true);
    assert.equal(by["notes/a.md"].source, "agent");
    assert.equal(r.body.template, "concierge");
    assert.ok(Array.isArray(r.body.skills));
    assert.equal(r.body.pins.files[0].file, "GUARDRAILS.md");
  });

  test("opening one file says where it comes from exactly as the tree does", async () => {
    const tree = (await api("GET", "/api/agents/main/workspace")).body.files;
    assert.ok(tree.length >= 5);
    for (const f of tree) {
      const one = await api("GET", `/api/agents/main/workspace/${f.path}`);
      assert.equal(one.status, 200, `${f.path}: ${JSON.stringify(one.body)}`);
      const { path, key, source, pinned, updateAvailable, inheritsOnDelete } = one.body;
      assert.deepEqual({ path, key, source, pinned, updateAvailable, inheritsOnDelete }, { path: f.path, key: f.key, source: f.source, pinned: f.pinned, updateAvailable: f.updateAvailable, inheritsOnDelete: f.inheritsOnDelete }, f.path);
    }
    // The pinned guardrail is the accepted version's content; a file only the
    // template has below the root is not the agent's.
    assert.equal((await api("GET", "/api/agents/main/workspace/GUARDRAILS.md")).body.content, "Guard v1");
    await h.putFile("_catalog/concierge/workspace/deep/x.md", "not a root file");
    assert.equal((await api("GET", "/api/agents/main/workspace/deep/x.md")).status, 404);
    await (await h.bucket()).delete("_catalog/concierge/workspace/deep/x.md");
  });

  test("saving an inherited file makes an override; deleting it re-inherits", async () => {
    const got = await api("GET", "/api/agents/main/workspace/IDENTITY.md");
    assert.equal(got.status, 200);
    assert.equal(got.body.content, "- **Name:** Conci");
    assert.equal(got.body.source, "template");
    assert.equal((await api("PUT", "/api/agents/main/workspace/IDENTITY.md", "- **Name:** Mine")).status, 200);
    const mine = await api("GET", "/api/agents/main/workspace/IDENTITY.md");
    assert.equal(mine.body.source, "agent");
    assert.equal(mine.body.content, "- **Name:** Mine");
    assert.equal(mine.body.inheritsOnDelete, true);
    // One write path: the override is a version in the workspace history, by the owner.
    const hist = await api("GET", "/api/agents/main/history/IDENTITY.md");
    assert.equal(hist.status, 200, JSON.stringify(hist.body));
    assert.equal(hist.body.versions.length, 1);
    assert.match(JSON.stringify(hist.body.versions[0]), /owner/);
    assert.equal((await api("DELETE", "/api/agents/main/workspace/IDENTITY.md")).status, 200);
    const back = await api("GET", "/api/agents/main/workspace/IDENTITY.md");
    assert.equal(back.body.source, "template");
    assert.equal((await api("DELETE", "/api/agents/main/workspace/IDENTITY.md")).status, 404, "no override left");
  });

  test("a write to a pinned file without accept is refused", async () => {
    const r = await api("PUT", "/api/agents/main/workspace/GUARDRAILS.md", "anything goes");
    assert.equal(r.status, 403);
    assert.match(r.body.error, /pinned guardrail file/);
    assert.equal(await (await h.bucket()).get("agents/main/GUARDRAILS.md"), null);
    const forced = await api("PUT", "/api/agents/main/workspace/GUARDRAILS.md", "mine", "?accept=override");
    assert.equal(forced.status, 200);
    assert.equal((await api("GET", "/api/agents/main/workspace/GUARDRAILS.md")).body.source, "agent");
    await api("DELETE", "/api/agents/main/workspace/GUARDRAILS.md");
  });

  test("the template and defaults layers: list, get, put, delete", async () => {
    const t = await api("GET", "/api/templates/concierge/workspace");
    assert.deepEqual(t.body.files.map((f) => f.path), ["GUARDRAILS.md", "IDENTITY.md"]);
    assert.equal((await api("PUT", "/api/templates/concierge/workspace/SOUL.md", "Template soul")).status, 200);
    assert.equal((await api("GET", "/api/templates/concierge/workspace/SOUL.md")).body.content, "Template soul");
    assert.equal((await api("GET", "/api/agents/work/workspace/SOUL.md")).body.source, "template");
    assert.equal((await api("DELETE", "/api/templates/concierge/workspace/SOUL.md")).status, 200);
    const d = await api("GET", "/api/defaults/workspace");
    assert.deepEqual(d.body.files.map((f) => f.path), ["SOUL.md", "USER.md"]);
    assert.equal((await api("PUT", "/api/defaults/workspace/TOOLS.md", "tools")).status, 200);
    assert.equal((await api("GET", "/api/agents/work/workspace/TOOLS.md")).body.source, "defaults");
    assert.equal((await api("DELETE", "/api/defaults/workspace/TOOLS.md")).status, 200);
  });

  test("bad input gets a 4xx naming the problem", async () => {
    const cases = [
      ["GET", "/api/agents/main/workspace/a%2F..%2Fb", 400, /'\.\.'/],
      ["PUT", "/api/agents/main/workspace/sessions/x.jsonl.gz", 400, /session archives/],
      ["GET", "/api/templates/a%2Fb/workspace", 400, /template/],
      ["GET", "/api/agents/main/workspace/NOPE.md", 404, /NOPE\.md/],
      ["GET", "/api/agents/nobody/workspace", 404, /nobody/],
      ["PUT", "/api/defaults/workspace/x.md", 400, /UTF-8/, Buffer.from([0xff, 0xfe, 0x00])],
    ];
    for (const [method, path, status, why, body] of cases) {
      const r = await api(method, path, body ?? (method === "PUT" ? "x" : undefined));
      assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.error ?? JSON.stringify(r.body), why, `${method} ${path}`);
    }
  });

  test("memory: stores, and a note written, found and read through /memory/call", async () => {
    const stores = await api("GET", "/api/agents/main/memory/stores");
    assert.ok(stores.body.stores.includes("main"));
    const call = (body) => api("POST", "/api/agents/main/memory/call", JSON.stringify(body));
    const add = await call({ call: "op", store: "main", op: { op: "add", name: "tea", content: "Olga drinks green tea", kind: "note", created_at: Date.now() } });
    assert.equal(add.status, 200, JSON.stringify(add.body));
    const found = await call({ call: "search", store: "main", query: "green tea", k: 5 });
    assert.equal(found.body.hits[0].entry.name, "tea");
    assert.equal((await call({ call: "get", store: "main", name: "tea" })).body.entry.content, "Olga drinks green tea");
    assert.equal((await call({ call: "recall", store: "main", query: "x", k: 1 })).status, 400);
    assert.equal((await call({ call: "nope" })).status, 400);
  });

  test("memory browsing: a store's notes a page at a time, newest first; the owner's only", async () => {
    const call = (body) => api("POST", "/api/agents/main/memory/call", JSON.stringify(body));
    const add = (store, name, content) => call({ call: "op", store, op: { op: "add", name, content, kind: "note", created_at: 1_700_000_000_000 } });
    const store = "group:telegram:-1001";
    for (const i of [1, 2, 3]) assert.equal((await add(store, `n${i}`, `Note ${i}\nmore`)).status, 200);
    const first = await api("GET", "/api/agents/main/memory/notes", undefined, `?store=${encodeURIComponent(store)}&limit=2`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.total, 3);
    assert.deepEqual(first.body.notes[0], { name: "n3", kind: "note", createdAt: 1_700_000_000_000, summary: "Note 3", length: 11 });
    assert.deepEqual(first.body.notes.map((n) => n.name), ["n3", "n2"]);
    const next = await api("GET", "/api/agents/main/memory/notes", undefined, `?store=${encodeURIComponent(store)}&offset=2&limit=2`);
    assert.deepEqual(next.body.notes.map((n) => n.name), ["n1"]);
    // Without store: the owner's main store (the "tea" note above), not the group's.
    const main = await api("GET", "/api/agents/main/memory/notes");
    assert.ok(main.body.notes.some((n) => n.name === "tea") && !main.body.notes.some((n) => n.name === "n1"));
    // The same through /memory/call.
    assert.equal((await call({ call: "list", store, offset: 0, limit: 1 })).body.notes[0].name, "n3");
    const bad = await api("GET", "/api/agents/main/memory/notes", undefined, "?limit=lots");
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /limit must be a whole number/);
    // Another key of the agent, or no key: nothing listed.
    const other = await h.fetch("/api/agents/main/memory/notes", { headers: { authorization: `Bearer ${SITE_KEY}` } });
    assert.equal(other.status, 403);
    assert.doesNotMatch(await other.text(), /tea/);
    assert.equal((await h.fetch("/api/agents/main/memory/notes")).status, 401);
  });
});

describe("what the console's pages read", () => {
  test("sessions are listed with who each chat is with and its last message", async () => {
    const r = await h.sendUpdate(tgUpdate({ from: FRIEND, text: "Is the shop open on Sunday?" }));
    assert.equal(r.status, 200);
    const key = `agent:main:telegram:dm:${FRIEND}`;
    const entry = await h.until(async () => {
      const list = await (await h.fetch("/api/agents/main/sessions", { headers: bearer })).json();
      return list.live.find((s) => s.sessionKey === key && s.last);
    }, { what: "the session in the registry" });
    assert.equal(entry.title, "Pat", "the person's name, not the chat id");
    assert.equal(entry.last.role, "assistant");
    assert.equal(entry.last.text, "echo: Is the shop open on Sunday?");
    assert.ok(entry.last.at > 0 && entry.last.at <= Date.now());
    // The session's own status: the history, and no notes when nothing failed.
    const status = await (await h.fetch(`/api/agents/main/sessions/${encodeURIComponent(key)}`, { headers: bearer })).json();
    assert.equal(status.messages.at(-1).role, "assistant");
    assert.equal(status.notes, undefined);
  });
});
