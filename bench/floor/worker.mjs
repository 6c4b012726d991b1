// The JS I/O floor: a plain JavaScript Worker that does, for a Telegram
// message, the I/O a Hearth turn does, and nothing else. Same bindings and
// settings as Hearth (BUCKET, SESSION, AGENT; the stand-ins' addresses), the
// same objects and calls, the same SQLite statements (a Hearth turn's, as
// counted by bench/turns.mjs), the same R2 listings and reads, the same
// requests to the model (streamed) and to Telegram. What it does not do is
// everything in between: parsing beyond JSON.parse, settings, prompt
// assembly, the model's encoding and decoding, the outbox's bookkeeping,
// usage and so on. The ratio of Hearth's figures to this worker's in the same
// run is what Hearth's own work costs over the I/O it cannot avoid.
//
// Not a product: no retries, no errors handled, owner and ALLOW_FROM only.
import { DurableObject } from "cloudflare:workers";

const SESSION_TABLES = [
  "CREATE TABLE IF NOT EXISTS inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, dedupe_key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, received_at INTEGER NOT NULL, finished_at INTEGER)",
  "CREATE INDEX IF NOT EXISTS inbox_open ON inbox(state, seq)",
  "CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message TEXT NOT NULL)",
  "CREATE INDEX IF NOT EXISTS history_session ON history(session_id, seq)",
  "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS compactions (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, archive_name TEXT NOT NULL, archived_at INTEGER NOT NULL, summary TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS usage (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, session_id TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'conversation', settled INTEGER NOT NULL DEFAULT 1)",
];
const OUTBOX_TABLES = [
  "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, reply TEXT NOT NULL, kind TEXT NOT NULL, chat TEXT NOT NULL, target TEXT NOT NULL, part INTEGER NOT NULL, parts INTEGER NOT NULL, text TEXT NOT NULL, markup INTEGER NOT NULL, opens INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, next_at INTEGER NOT NULL, last_error TEXT, done_at INTEGER, UNIQUE (reply, part))",
  "CREATE INDEX IF NOT EXISTS outbox_open ON outbox(state, chat, seq)",
  "CREATE INDEX IF NOT EXISTS outbox_target ON outbox(target)",
];
const CONVERSATION_TABLES = [
  "CREATE TABLE IF NOT EXISTS conv_session (store TEXT NOT NULL, ord INTEGER NOT NULL, session_id TEXT NOT NULL, session_key TEXT NOT NULL, channel TEXT NOT NULL, PRIMARY KEY (store, ord))",
  "CREATE UNIQUE INDEX IF NOT EXISTS conv_session_id ON conv_session (store, session_id)",
  "CREATE TABLE IF NOT EXISTS conv_turn (id INTEGER PRIMARY KEY, store TEXT NOT NULL, ord INTEGER NOT NULL, at INTEGER NOT NULL, speaker TEXT NOT NULL, channel TEXT NOT NULL, text TEXT NOT NULL, reply TEXT NOT NULL)",
  "CREATE INDEX IF NOT EXISTS conv_turn_store ON conv_turn (store, id)",
  "CREATE INDEX IF NOT EXISTS conv_turn_session ON conv_turn (store, ord, id)",
  "CREATE TABLE IF NOT EXISTS conv_source (store TEXT NOT NULL, source TEXT NOT NULL, added INTEGER NOT NULL, PRIMARY KEY (store, source))",
  "CREATE INDEX IF NOT EXISTS conv_source_any ON conv_source (source)",
  "CREATE TABLE IF NOT EXISTS conv_checkpoint (store TEXT NOT NULL, seq INTEGER NOT NULL, chunk BLOB NOT NULL, PRIMARY KEY (store, seq))",
];
const MEMORY_TABLES = [
  "CREATE TABLE IF NOT EXISTS memory_snapshot (store TEXT NOT NULL, seq INTEGER NOT NULL, chunk BLOB NOT NULL, PRIMARY KEY (store, seq))",
  "CREATE TABLE IF NOT EXISTS memory_log (store TEXT NOT NULL, entry_id INTEGER NOT NULL, record BLOB NOT NULL, PRIMARY KEY (store, entry_id))",
  "CREATE TABLE IF NOT EXISTS memory_recalls (store TEXT NOT NULL, day INTEGER NOT NULL, events INTEGER NOT NULL, PRIMARY KEY (store, day))",
  "CREATE TABLE IF NOT EXISTS memory_evidence (store TEXT NOT NULL, entry_id INTEGER NOT NULL, hits INTEGER NOT NULL, PRIMARY KEY (store, entry_id))",
];
const WORKSPACE_TABLES = ["CREATE TABLE IF NOT EXISTS workspace_cache (agent TEXT PRIMARY KEY, snapshot TEXT NOT NULL)"];
const MCP_TABLES = ["CREATE TABLE IF NOT EXISTS mcp_servers (name TEXT PRIMARY KEY, config TEXT NOT NULL, tools TEXT NOT NULL, listed_at INTEGER, checked_at INTEGER, error TEXT)"];
const REGISTRY_TABLES = [
  "CREATE TABLE IF NOT EXISTS sessions (session_key TEXT PRIMARY KEY, session_id TEXT, updated_at INTEGER)",
  "CREATE TABLE IF NOT EXISTS session_labels (session_key TEXT PRIMARY KEY, title TEXT, last TEXT)",
];

/** Tables set up once per object, as Hearth's `schema_versions` does. */
function ensure(self, name, statements) {
  const sql = self.ctx.storage.sql;
  if (!self.versions) {
    try {
      self.versions = new Set(sql.exec("SELECT name FROM schema_versions").toArray().map((r) => r.name));
      self.hasTable = true;
    } catch {
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").toArray();
      self.versions = new Set();
    }
  }
  if (self.versions.has(name)) return;
  // One exec: the tables, the versions table if missing, the version's record.
  const all = [...statements, ...(self.hasTable ? [] : ["CREATE TABLE IF NOT EXISTS schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)"])];
  sql.exec(`${all.join(";\n")};\nINSERT INTO schema_versions (name, version) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET version = excluded.version`, name, 1);
  self.hasTable = true;
  self.versions.add(name);
}

const json = (v, status = 200) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });
const post = (stub, path, body) => stub.fetch(`https://object${path}`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.json());
const agentStub = (env, agent) => env.AGENT.get(env.AGENT.idFromName(agent));

export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (req.method === "GET" && url.pathname === "/health") return json({ ok: true, name: "floor" });
    const m = url.pathname.match(/^\/telegram\/([^/]+)$/);
    if (!m || req.method !== "POST") return new Response("not found", { status: 404 });
    if (req.headers.get("x-telegram-bot-api-secret-token") !== env.TELEGRAM_WEBHOOK_SECRET) return new Response("no", { status: 401 });
    const update = await req.json();
    const msg = update.message;
    const who = `telegram:${msg.from.id}`;
    const owner = (env.OWNER_IDS || "").split(",").includes(who);
    if (!owner && !(env.ALLOW_FROM || "").split(",").includes(who)) return new Response("not allowed");
    const key = owner ? `agent:${m[1]}:main` : `agent:${m[1]}:telegram:dm:${msg.from.id}`;
    const inbound = { dedupeKey: `telegram:update:${update.update_id}`, chatId: String(msg.chat.id), text: msg.text, senderName: msg.from.first_name, receivedAt: Date.now() };
    const stub = env.SESSION.get(env.SESSION.idFromName(key));
    const reply = await post(stub, "/enqueue", { sessionKey: key, inbound });
    return new Response(reply.queued ? "queued" : "duplicate");
  },
};

export class Session extends DurableObject {
  async fetch(req) {
    const body = await req.json();
    const sql = this.ctx.storage.sql;
    ensure(this, "session", SESSION_TABLES);
    if (!sql.exec("SELECT value FROM meta WHERE key = ?", "session_key").toArray().length) {
      sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "session_key", body.sessionKey);
    }
    this.key = body.sessionKey;
    if (sql.exec("SELECT 1 FROM inbox WHERE dedupe_key = ?", body.inbound.dedupeKey).toArray().length) return json({ queued: false });
    sql.exec("INSERT INTO inbox (dedupe_key, payload, received_at) VALUES (?, ?, ?)", body.inbound.dedupeKey, JSON.stringify(body.inbound), Date.now());
    await this.ctx.storage.setAlarm(Date.now());
    return json({ queued: true });
  }

  async alarm() {
    const sql = this.ctx.storage.sql;
    ensure(this, "session", SESSION_TABLES);
    ensure(this, "outbox", OUTBOX_TABLES);
    const env = this.env;
    this.key ??= sql.exec("SELECT value FROM meta WHERE key = ?", "session_key").one().value;
    const agent = this.key.split(":")[1];
    sql.exec("SELECT seq, reply FROM outbox WHERE state = 'pending' AND next_at <= ? ORDER BY seq", Date.now()).toArray();
    for (;;) {
      const item = sql.exec("SELECT seq, payload, state, attempts FROM inbox WHERE state IN ('pending','active') ORDER BY seq LIMIT 1").toArray()[0];
      if (!item) break;
      const inbound = JSON.parse(item.payload);
      let sid = sql.exec("SELECT value FROM meta WHERE key = ?", "session_id").toArray()[0]?.value;
      sql.exec("SELECT value FROM meta WHERE key = ?", "updated_at").toArray();
      if (!sid) {
        sid = crypto.randomUUID();
        sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "session_id", sid);
        sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "created_at", String(Date.now()));
      }
      const count = sql.exec("SELECT COUNT(*) AS n FROM history WHERE session_id = ?", sid).one().n;
      const stub = agentStub(env, agent);
      const now = new Date();
      const day = (t) => new Date(t).toISOString().slice(0, 10);
      // Recall (the owner's) and the session's start, at once.
      const [recalled, start] = await Promise.all([
        this.key.endsWith(":main") ? post(stub, `/memory/call?agent=${agent}`, { call: "recall", store: "main", query: inbound.text, k: 3 }) : null,
        this.workspace ? null : post(stub, "/sessions/start", { sessionKey: this.key, today: day(now), yesterday: day(now - 86_400_000), workspace: true, mcp: count === 0 }),
      ]);
      if (start) {
        this.workspace = start.texts;
        sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", "mcp_catalog", JSON.stringify({ sessionId: sid, catalog: start.mcp }));
      }
      const user = { role: "user", content: [{ type: "text", text: `<system-reminder>Current time: ${now.toISOString()}</system-reminder>` }, ...(recalled?.hits?.length ? [{ type: "text", text: "recalled" }] : []), { type: "text", text: inbound.text }], timestamp: Date.now() };
      sql.exec("INSERT INTO history (session_id, message) VALUES (?, ?)", sid, JSON.stringify(user));
      sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "updated_at", String(Date.now()));
      sql.exec("UPDATE inbox SET state = 'active', attempts = attempts + 1 WHERE seq = ?", item.seq);
      const tg = (method, body) => fetch(`${env.TELEGRAM_API_BASE}/bot${env.TELEGRAM_BOT_TOKEN}/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json());
      // "typing…" while the prompt is put together (a warm object lists the agent's root).
      const typing = tg("sendChatAction", { chat_id: inbound.chatId, action: "typing" });
      if (!start) await this.env.BUCKET.list({ prefix: `agents/${agent}/`, delimiter: "/" });
      sql.exec("SELECT value FROM meta WHERE key = ?", "session_id").toArray();
      sql.exec("SELECT COUNT(*) FROM history WHERE session_id = ?", sid).toArray();
      await typing;
      sql.exec("SELECT archive_name, archived_at, summary FROM compactions WHERE session_id = ? ORDER BY seq DESC LIMIT 1", sid).toArray();
      sql.exec("SELECT MIN(seq), MAX(seq), COUNT(*) FROM history WHERE session_id = ?", sid).toArray();
      const messages = sql.exec("SELECT seq, message FROM history WHERE session_id = ? AND seq > ? ORDER BY seq", sid, 0).toArray().map((r) => {
        const m = JSON.parse(r.message);
        return { role: m.role, content: m.content };
      });
      const system = `## Core\n\nYou are a personal AI agent.\n\n${this.workspace.map((f) => `## ${f.key}\n\n${f.text}`).join("\n\n")}\n\n## Runtime\n\nsession=${this.key}`;
      const res = await fetch(`${env.LLM_BASE_URL}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", "anthropic-version": "2023-06-01", "x-api-key": env.LLM_API_KEY },
        body: JSON.stringify({ model: env.LLM_MODEL, max_tokens: 4096, system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }], tools: TOOLS, messages, stream: true }),
      });
      // The stream's text deltas and usage.
      let text = "";
      let usage = {};
      for (const line of (await res.text()).split("\n")) {
        if (!line.startsWith("data:")) continue;
        const ev = JSON.parse(line.slice(5));
        if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
        if (ev.type === "message_start") usage = ev.message.usage;
        if (ev.type === "message_delta" && ev.usage) usage = { ...usage, ...ev.usage };
      }
      sql.exec("SELECT value FROM meta WHERE key = ?", "meter").toArray();
      sql.exec("INSERT INTO usage (at, session_id, model, input, output, cache_read, cache_write, kind, settled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)", Date.now(), sid, env.LLM_MODEL, usage.input_tokens ?? 0, usage.output_tokens ?? 0, usage.cache_read_input_tokens ?? 0, usage.cache_creation_input_tokens ?? 0, "conversation");
      sql.exec("INSERT INTO history (session_id, message) VALUES (?, ?)", sid, JSON.stringify({ role: "assistant", content: [{ type: "text", text }], timestamp: Date.now() }));
      sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "updated_at", String(Date.now()));
      // The reply through the outbox: queued, sent, marked.
      const reply = `r-${item.seq}`;
      const target = JSON.stringify({ channel: "telegram", chat_id: inbound.chatId });
      sql.exec("DELETE FROM outbox WHERE (state = 'sent' AND done_at < ?) OR (state NOT IN ('pending', 'sent') AND done_at < ?)", Date.now() - 86_400_000, Date.now() - 7 * 86_400_000);
      sql.exec("SELECT 1 FROM outbox WHERE reply = ? LIMIT 1", reply).toArray();
      sql.exec("SELECT 1 FROM outbox WHERE target = ? LIMIT 1", target).toArray();
      sql.exec("INSERT INTO outbox (reply, kind, chat, target, part, parts, text, markup, opens, created_at, next_at) VALUES (?, 'answer', ?, ?, 0, 1, ?, 1, 1, ?, ?)", reply, inbound.chatId, target, text, Date.now(), Date.now());
      const piece = sql.exec("SELECT seq, text FROM outbox WHERE state = 'pending' AND chat = ? ORDER BY seq LIMIT 1", inbound.chatId).one();
      await tg("sendMessage", { chat_id: inbound.chatId, link_preview_options: { is_disabled: true }, parse_mode: "HTML", text: piece.text.replace(/&/g, "&amp;").replace(/</g, "&lt;") });
      sql.exec("UPDATE outbox SET state = 'sent', text = '', attempts = attempts + 1, last_error = NULL, done_at = ? WHERE seq = ?", Date.now(), piece.seq);
      sql.exec("SELECT seq FROM outbox WHERE state = 'pending' ORDER BY seq LIMIT 1").toArray();
      sql.exec("SELECT value FROM meta WHERE key = ?", "session_id").toArray();
      sql.exec("SELECT value FROM meta WHERE key = ?", "updated_at").toArray();
      sql.exec("UPDATE inbox SET state = 'done', payload = '', finished_at = ? WHERE seq = ?", Date.now(), item.seq);
      sql.exec("DELETE FROM inbox WHERE state = 'done' AND finished_at < ?", Date.now() - 7 * 86_400_000);
    }
    sql.exec("SELECT seq FROM outbox WHERE state = 'pending' ORDER BY seq LIMIT 1").toArray();
    sql.exec("SELECT seq, at FROM usage WHERE settled = 0 ORDER BY seq LIMIT 200").toArray();
    sql.exec("SELECT COUNT(*) FROM inbox WHERE state IN ('pending','active')").toArray();
    sql.exec("SELECT seq FROM outbox WHERE state = 'pending' ORDER BY seq LIMIT 1").toArray();
    // The registry, told once a minute (here: on the object's first turn).
    if (!this.registered) {
      const sid = sql.exec("SELECT value FROM meta WHERE key = ?", "session_id").one().value;
      const last = sql.exec("SELECT message FROM history WHERE session_id = ? ORDER BY seq DESC LIMIT ?", sid, 1).toArray()[0];
      sql.exec("SELECT value FROM meta WHERE key = ?", "updated_at").toArray();
      await post(agentStub(this.env, this.key.split(":")[1]), "/sessions/touch", { sessionKey: this.key, sessionId: sid, updatedAt: Date.now(), last: last && JSON.parse(last.message).content[0].text });
      this.registered = true;
    }
  }
}

export class Agent extends DurableObject {
  async fetch(req) {
    const url = new URL(req.url);
    const body = await req.json();
    const sql = this.ctx.storage.sql;
    if (url.pathname === "/memory/call") {
      ensure(this, "conversations", CONVERSATION_TABLES);
      sql.exec("SELECT 1 FROM conv_session WHERE store = ? LIMIT 1", "main").toArray();
      ensure(this, "memory", MEMORY_TABLES);
      if (!this.memoryLoaded) {
        sql.exec("SELECT seq, chunk FROM memory_snapshot WHERE store = ? ORDER BY seq", "main").toArray();
        sql.exec("SELECT entry_id, record FROM memory_log WHERE store = ?", "main").toArray();
        this.memoryLoaded = true;
      }
      return json({ ok: true, hits: [], conversations: [] });
    }
    if (url.pathname === "/sessions/start") return json(await this.start(body));
    if (url.pathname === "/sessions/touch") {
      ensure(this, "registry", REGISTRY_TABLES);
      sql.exec("INSERT INTO sessions (session_key, session_id, updated_at) VALUES (?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at", body.sessionKey, body.sessionId, body.updatedAt);
      sql.exec("INSERT INTO session_labels (session_key, title, last) VALUES (?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET last = excluded.last", body.sessionKey, null, JSON.stringify(body.last ?? null));
      return json({ ok: true });
    }
    return new Response("not found", { status: 404 });
  }

  /** The workspace: the agent's root listed on each call; the first call lists every layer and reads each file. */
  async start(body) {
    const sql = this.ctx.storage.sql;
    const agent = body.sessionKey.split(":")[1];
    const bucket = this.env.BUCKET;
    const main = body.sessionKey.endsWith(":main");
    ensure(this, "workspace_cache", WORKSPACE_TABLES);
    if (!this.files) {
      const kept = sql.exec("SELECT snapshot FROM workspace_cache WHERE agent = ?", agent).toArray()[0];
      this.files = kept ? JSON.parse(kept.snapshot) : null;
    }
    const root = await bucket.list({ prefix: `agents/${agent}/`, delimiter: "/" });
    let files = this.files;
    if (!files) {
      const common = [...body.today].filter((c, i) => c === body.yesterday[i]).join("");
      const [defaults, skills, globalSkills, notes] = await Promise.all([
        bucket.list({ prefix: "_catalog/defaults/workspace/", delimiter: "/" }),
        bucket.list({ prefix: `agents/${agent}/skills/` }),
        bucket.list({ prefix: "skills/" }),
        bucket.list({ prefix: `agents/${agent}/memory/${common}` }),
      ]);
      const keys = [...root.objects, ...defaults.objects, ...skills.objects, ...globalSkills.objects, ...notes.objects]
        .map((o) => o.key)
        .filter((k) => k.endsWith(".md") && !k.endsWith("/mcp.json"));
      files = await Promise.all(keys.map(async (key) => ({ key, text: await (await bucket.get(key)).text() })));
      sql.exec("INSERT INTO workspace_cache (agent, snapshot) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET snapshot = excluded.snapshot", agent, JSON.stringify(files));
      this.files = files;
    }
    let mcp = null;
    if (body.mcp) {
      ensure(this, "mcp_servers", MCP_TABLES);
      sql.exec("SELECT name, config, tools, listed_at, checked_at, error FROM mcp_servers ORDER BY name").toArray();
      sql.exec("DELETE FROM mcp_servers");
      mcp = { servers: [] };
    }
    const privateFile = (k) => /\/(USER|MEMORY)\.md$|\/memory\//.test(k);
    return { texts: files.filter((f) => main || !privateFile(f.key)), mcp };
  }
}

// Seventeen tool definitions, about the size of a Hearth session's.
const TOOLS = [
  "delete_file", "edit_file", "load_skill", "memory_add", "memory_alias", "memory_get", "memory_remove", "memory_rename", "memory_search",
  "memory_write", "my_stats", "read_file", "session_logs", "web_fetch", "what_do_i_know", "who_am_i", "write_file",
].map((name) => ({
  name,
  description: `The ${name.replace(/_/g, " ")} tool: what it does, when to use it and what it returns, in a sentence or three as a model reads it before it calls a tool.`,
  input_schema: { type: "object", properties: { path: { type: "string", description: "A path relative to the workspace, e.g. notes/ideas.md" }, text: { type: "string", description: "The text" } }, required: ["path"] },
}));
