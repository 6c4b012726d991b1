// Bench rows for conversation memory (issue 22), in workerd:
//
// 1. LoCoMo through the Worker. Conversations 42, 43, 44, 47, 48, 49 and 50 of
//    snap-research/locomo (`data/locomo10.zip`, CC BY-NC 4.0: fetched into
//    .bench/locomo/, never committed; without it this part is skipped with a
//    note). Each conversation gets a fresh Hearth; each of its sessions is one
//    conversation of the owner's main thread over `POST /api/agents/main/generate`,
//    one turn per LoCoMo turn (`resourceId` = its speaker; a shared image is sent
//    as its caption, "[shares …]", as the LoCoMo paper's text baselines do; the
//    LLM stand-in answers "OK."), archived with `/reset`. Then every question of
//    categories 1–4 goes to `search_memory` over MCP (the same code as the agent's
//    `memory_search`). A hit is an exchange shown with the one before and after it:
//    "shown" counts the evidence turns among those three, "hit" among the hits
//    alone; "session" is the evidence session among the sessions of the first 5
//    hits. The floor, plain BM25 over one entry per turn, is Hearth's own BM25
//    natively (bench/memory/conversation_bench.rs), printed beside.
//    Conversations 26, 30 and 41 are never read: they are kept for checks.
// 2. Scale: 100,000 archived exchanges (LoCoMo turns repeated into 500 archives
//    of 200) indexed by the Agent object's background indexing; its workerd CPU
//    per 200 exchanges; search wall time p50/p99 over the admin API; the first
//    search after a restart (the index loaded cold); workerd's memory before and
//    after the load.
//
// 3. The paged alternative the issue asked to measure: the same 100,000 exchanges in a
//    SQLite FTS5 table of a Durable Object (a JS one, in the same workerd), searched
//    with the same question words (OR, ranked by `bm25()`), with their document
//    frequencies from `fts5vocab` for the common-word rule.
//
// BENCH_LOCOMO_CONVERSATIONS=42,43 narrows part 1; BENCH_CONVERSATION_SCALE=20000
// shrinks parts 2 and 3; BENCH_CONVERSATION_PARTS=scale,fts5 picks parts.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { startHearth } from "../tests/helpers/hearth.mjs";
import { percentile } from "../tests/helpers/stats.mjs";
import { cpuMeasurable, workerdCpuMeter, workerdPids } from "../tests/helpers/workerd-cpu.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LOCOMO = process.env.LOCOMO_DIR || path.join(ROOT, ".bench/locomo/locomo10_v2");
const CONVERSATIONS = (process.env.BENCH_LOCOMO_CONVERSATIONS || "42,43,44,47,48,49,50").split(",").map(Number);
const SCALE = Number(process.env.BENCH_CONVERSATION_SCALE || 100_000);
const TOKEN = "bench-conversations-token";
const mark = (ok) => (ok ? " ✓" : " ✗");
const pct = (x) => `${(100 * x).toFixed(1)} %`;
const sorted = (xs) => [...xs].sort((a, b) => a - b);

function post(h, p, body) {
  return h.fetch(p, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify(body) });
}

/** A LoCoMo conversation: sessions of {dia, speaker, text}, and its questions of categories 1–4. */
function loadConversation(id) {
  const d = JSON.parse(readFileSync(path.join(LOCOMO, `${id}.json`), "utf8"));
  const sessions = [];
  for (let n = 1; d[`session_${n}`]; n++) {
    sessions.push(d[`session_${n}`].map((t) => ({ dia: t.dia_id, speaker: t.speaker, text: t.text + (t.blip_caption ? ` [shares ${t.blip_caption}]` : ""), session: n })));
  }
  const questions = d.qa.filter((q) => q.category >= 1 && q.category <= 4);
  return { sessions, questions };
}

async function searchMemory(h, query, k) {
  const res = await post(h, "/mcp/main", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_memory", arguments: { query, k } } });
  const text = await res.text();
  const json = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: ")).slice(6));
  return JSON.parse(json.result.content.map((c) => c.text).join("")).conversations;
}

/** Evidence tallies: per category (0 = all), at k. */
function tally() {
  const t = {};
  return {
    add(cat, k, share, all, session) {
      for (const c of [0, cat]) {
        const key = `${c}@${k}`;
        t[key] ||= { n: 0, hit: 0, shown: 0, all: 0, session: 0 };
        const x = t[key];
        x.n++;
        x.hit += share.hit;
        x.shown += share.shown;
        x.all += all ? 1 : 0;
        x.session += session ? 1 : 0;
      }
    },
    get: (cat, k) => t[`${cat}@${k}`],
  };
}

async function locomoPart(rows) {
  if (!existsSync(path.join(LOCOMO, "42.json"))) {
    rows.push({ name: "LoCoMo evidence recall", value: `skipped: no LoCoMo in ${LOCOMO} (CC BY-NC 4.0, fetched by hand into .bench/, see README)` });
    return null;
  }
  const t = tally();
  let turnsSent = 0;
  const t0 = performance.now();
  for (const id of CONVERSATIONS) {
    const { sessions, questions } = loadConversation(id);
    const h = await startHearth({ bindings: { ADMIN_TOKEN: TOKEN } });
    try {
      h.llm.state.responder = () => ({ text: "OK." });
      for (const session of sessions) {
        for (const turn of session) {
          const r = await post(h, "/api/agents/main/generate", { messages: [{ role: "user", content: turn.text }], threadId: "main", resourceId: turn.speaker });
          if (r.status !== 200) throw new Error(`generate answered ${r.status}: ${await r.text()}`);
          await r.arrayBuffer();
          turnsSent++;
        }
        const r = await post(h, "/api/agents/main/generate", { messages: [{ role: "user", content: "/reset" }], threadId: "main" });
        if (r.status !== 200) throw new Error(`/reset answered ${r.status}`);
        await r.arrayBuffer();
      }
      process.stderr.write(`[conversations] LoCoMo ${id}: ${sessions.length} sessions sent, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
      // Archives in upload order are the LoCoMo sessions in order: Hearth's session id → LoCoMo session.
      const bucket = await h.bucket();
      const listed = (await bucket.list({ prefix: "agents/main/sessions/", include: ["customMetadata"] })).objects;
      const bySession = new Map(sorted(listed.map((o) => o.uploaded.getTime())).map((at, i) => [listed.find((o) => o.uploaded.getTime() === at).customMetadata.sessionId, i + 1]));
      const dias = new Map(); // `${locomoSession}\u0000${text}` -> dia ids
      for (const s of sessions) for (const turn of s) dias.set(`${turn.session}\u0000${turn.text}`, [...(dias.get(`${turn.session}\u0000${turn.text}`) || []), turn.dia]);
      const diaOf = (session, said) => dias.get(`${bySession.get(session)}\u0000${said}`) || [];
      for (const q of questions) {
        const hits = await searchMemory(h, q.question, 10);
        for (const k of [5, 10]) {
          const top = hits.slice(0, k);
          const hitDias = new Set(top.flatMap((x) => diaOf(x.session, x.said)));
          const shownDias = new Set(top.flatMap((x) => [x.before, x, x.after].filter(Boolean).flatMap((e) => diaOf(x.session, e.said))));
          const evidence = q.evidence.filter((e) => typeof e === "string");
          if (!evidence.length) continue;
          const share = { hit: evidence.filter((e) => hitDias.has(e)).length / evidence.length, shown: evidence.filter((e) => shownDias.has(e)).length / evidence.length };
          const evSessions = new Set(evidence.map((e) => Number(e.split(":")[0].slice(1))));
          const session = top.some((x) => evSessions.has(bySession.get(x.session)));
          t.add(q.category, k, share, share.shown === 1, session);
        }
      }
    } finally {
      await h.close();
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const all5 = t.get(0, 5);
  const all10 = t.get(0, 10);
  const r = (x, key) => x[key] / x.n;
  // The floor: Hearth's BM25 over one entry per turn, natively on the same turns.
  let floor = null;
  try {
    const out = execFileSync("cargo", ["run", "--quiet", "--release", "-p", "hearth-memory", "--example", "conversation_bench", "--", LOCOMO, "0"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    floor = JSON.parse(out.split("\n").find((l) => l.startsWith("BENCH_JSON ")).slice(11)).quality;
  } catch {}
  const floorNote = floor ? `; plain BM25 per turn: hit ${pct(floor.plain5.hit)}, shown ${pct(floor.plain5.shown)}` : "";
  rows.push({ name: `LoCoMo ${CONVERSATIONS.join(",")} (${all5.n} questions, cat. 1–4): evidence turn among the first 5 hits, shown (hit ± its neighbours)`, value: `${pct(r(all5, "shown"))} (all evidence shown: ${pct(r(all5, "all"))}${floorNote})`, target: `≥ 60 %${mark(r(all5, "shown") >= 0.6)}` });
  rows.push({ name: "LoCoMo: evidence turn among the first 5 hits themselves", value: pct(r(all5, "hit")), target: floor ? `plain BM25 per turn ${pct(floor.plain5.hit)}` : "" });
  rows.push({ name: "LoCoMo: evidence session among the sessions of the first 5 hits", value: pct(r(all5, "session")), target: `≥ 90 %${mark(r(all5, "session") >= 0.9)}${floor ? `; plain BM25 per turn ${pct(floor.plain5.session)}` : ""}` });
  rows.push({ name: "LoCoMo: @10 shown / hit / session", value: `${pct(r(all10, "shown"))} / ${pct(r(all10, "hit"))} / ${pct(r(all10, "session"))}` });
  for (const c of [1, 2, 3, 4]) {
    const x5 = t.get(c, 5);
    const x10 = t.get(c, 10);
    if (x5) rows.push({ name: `LoCoMo category ${c} (n=${x5.n}): shown @5 / @10, hit @5, all shown @5`, value: `${pct(r(x5, "shown"))} / ${pct(r(x10, "shown"))}, ${pct(r(x5, "hit"))}, ${pct(r(x5, "all"))}` });
  }
  rows.push({ name: "LoCoMo: turns sent through generate, and the part's wall time", value: `${turnsSent} turns, ${seconds.toFixed(0)} s` });
  return { shown5: r(all5, "shown"), hit5: r(all5, "hit"), session5: r(all5, "session") };
}

/** workerd's resident memory (KiB), all its processes. */
function workerdRss() {
  let kib = 0;
  for (const pid of workerdPids()) {
    try {
      const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
      if (m) kib += Number(m[1]);
    } catch {}
  }
  return kib;
}

async function scalePart(rows) {
  if (!existsSync(path.join(LOCOMO, "42.json")) || SCALE <= 0) return;
  // LoCoMo turns of the seven conversations, repeated into archives of 200 exchanges.
  const texts = CONVERSATIONS.flatMap((id) => loadConversation(id).sessions.flat());
  const PER = 200;
  const archives = Math.ceil(SCALE / PER);
  const dir = mkdtempSync(path.join(tmpdir(), "hearth-conv-bench-"));
  const h = await startHearth({ bindings: { ADMIN_TOKEN: TOKEN }, persist: dir });
  try {
    const bucket = await h.bucket();
    const start = Date.now() - 400 * 86_400_000;
    let n = 0;
    for (let a = 0; a < archives; a++) {
      const lines = [];
      for (let i = 0; i < PER; i++, n++) {
        const t = texts[n % texts.length];
        const at = start + n * 60_000;
        lines.push(JSON.stringify({ role: "user", content: t.text, timestamp: at, sender: t.speaker }));
        lines.push(JSON.stringify({ role: "assistant", content: [{ type: "text", text: "OK." }], timestamp: at + 1000 }));
      }
      const gz = gzipSync(lines.join("\n") + "\n");
      const meta = { sessionKey: "agent:main:main", sessionId: `bench-${String(a).padStart(4, "0")}`, agentId: "main" };
      await bucket.put(`agents/main/sessions/bench-${String(a).padStart(4, "0")}.jsonl.gz`, gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength), { customMetadata: meta });
    }
    const stats = async () => (await (await h.fetch("/api/agents/main/memory/call", { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ call: "stats", store: "main" }) })).json()).stats;
    const meter = cpuMeasurable() ? workerdCpuMeter() : null;
    const c0 = meter?.read();
    const w0 = performance.now();
    await (await h.mf.getWorker()).scheduled({ scheduledTime: Date.now(), cron: "*/5 * * * *" });
    await h.until(async () => (await stats())?.conversations >= archives * PER, { timeoutMs: 900_000, what: "the background indexing" });
    const indexSeconds = (performance.now() - w0) / 1000;
    const cpuPer200 = meter ? ((meter.read() - c0) / (archives * PER)) * 200 : NaN;
    const questions = CONVERSATIONS.flatMap((id) => loadConversation(id).questions.map((q) => q.question));
    const timeSearches = async (qs) => {
      const out = [];
      for (const q of qs) {
        const t = performance.now();
        const r = await post(h, "/api/agents/main/memory/call", { call: "search_conversations", store: "main", query: q, k: 5 });
        await r.json();
        out.push(performance.now() - t);
      }
      return sorted(out);
    };
    await timeSearches(questions.slice(0, 20)); // warm
    const warm = await timeSearches(questions.slice(20, 320));
    const cpuSearch0 = meter?.read();
    await timeSearches(questions.slice(320, 420));
    const cpuPerSearch = meter ? (meter.read() - cpuSearch0) / 100 : NaN;
    // Cold: a new workerd on the same state; the first search loads the index.
    await h.restart();
    await (await post(h, "/api/agents/main/memory/call", { call: "stats", store: "nothing-here" })).json(); // the Agent object itself, no index
    const rss0 = workerdRss();
    const t = performance.now();
    await (await post(h, "/api/agents/main/memory/call", { call: "search_conversations", store: "main", query: questions[0], k: 5 })).json();
    const cold = performance.now() - t;
    const rss1 = workerdRss();
    const again = await timeSearches(questions.slice(0, 20));
    rows.push({ name: `conversation memory at ${archives * PER} archived exchanges: indexing in the background`, value: `${indexSeconds.toFixed(0)} s; workerd CPU ${cpuPer200.toFixed(1)} ms per 200 exchanges (gunzip, read, index, write)`, target: `≤ 50 ms per 200${mark(cpuPer200 <= 50)}` });
    rows.push({ name: "conversation search over the admin API (Worker → Agent object), p50 / p99", value: `${percentile(warm, 50).toFixed(1)} / ${percentile(warm, 99).toFixed(1)} ms; workerd CPU ${cpuPerSearch.toFixed(1)} ms per search`, target: `p50 ≤ 10 ms${mark(percentile(warm, 50) <= 10)}` });
    rows.push({ name: "conversation index cold load: first search after a restart, minus a warm one", value: `${(cold - percentile(again, 50)).toFixed(1)} ms (first ${cold.toFixed(1)} ms)`, target: `≤ 100 ms${mark(cold - percentile(again, 50) <= 100)}` });
    rows.push({ name: "conversation index in memory: workerd RSS growth at its load", value: `${((rss1 - rss0) / 1024).toFixed(1)} MB`, target: `≤ 64 MB${mark((rss1 - rss0) / 1024 <= 64)}` });
  } finally {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// A Durable Object holding exchanges in FTS5 (part 3).
const FTS5_WORKER = `
export class Fts {
  constructor(state) { this.sql = state.storage.sql; }
  async fetch(req) {
    const url = new URL(req.url);
    const body = req.method === "POST" ? await req.json() : null;
    if (url.pathname === "/init") {
      this.sql.exec("CREATE VIRTUAL TABLE IF NOT EXISTS turns USING fts5(speaker, text)");
      this.sql.exec("CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(turns, 'row')");
    } else if (url.pathname === "/add") {
      for (const t of body) this.sql.exec("INSERT INTO turns (speaker, text) VALUES (?, ?)", t.speaker, t.text);
    } else if (url.pathname === "/search") {
      const n = this.sql.exec("SELECT count(*) AS n FROM turns").one().n;
      const marks = body.terms.map(() => "?").join(",");
      const df = new Map([...this.sql.exec("SELECT term, doc FROM vocab WHERE term IN (" + marks + ")", ...body.terms)].map((r) => [r.term, r.doc]));
      const kept = body.terms.filter((t) => df.get(t) && df.get(t) <= 0.3 * n);
      if (!kept.length) return Response.json([]);
      const q = kept.map((t) => '"' + t + '"').join(" OR ");
      return Response.json([...this.sql.exec("SELECT rowid, bm25(turns) AS s FROM turns WHERE turns MATCH ? ORDER BY s LIMIT 10", q)]);
    }
    return Response.json({ ok: true });
  }
}
export default { fetch: (req, env) => env.FTS.get(env.FTS.idFromName("x")).fetch(req) };
`;

async function fts5Part(rows) {
  if (!existsSync(path.join(LOCOMO, "42.json")) || SCALE <= 0) return;
  const texts = CONVERSATIONS.flatMap((id) => loadConversation(id).sessions.flat());
  const questions = CONVERSATIONS.flatMap((id) => loadConversation(id).questions.map((q) => q.question));
  const mf = new Miniflare({ modules: true, script: FTS5_WORKER, durableObjects: { FTS: { className: "Fts", useSQLite: true } }, cf: false });
  try {
    const call = async (p, b) => (await mf.dispatchFetch(`http://fts${p}`, b ? { method: "POST", body: JSON.stringify(b) } : {})).json();
    await call("/init");
    for (let n = 0; n < SCALE; n += 500) {
      await call("/add", Array.from({ length: Math.min(500, SCALE - n) }, (_, i) => texts[(n + i) % texts.length]));
    }
    const words = (q) => [...new Set((q.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []))];
    const times = [];
    for (const q of questions.slice(0, 300)) {
      const t = performance.now();
      await call("/search", { terms: words(q) });
      times.push(performance.now() - t);
    }
    const s = sorted(times);
    rows.push({ name: `the paged alternative: FTS5 in a Durable Object at ${SCALE} exchanges, search p50 / p99 (OR of the kept words, bm25())`, value: `${percentile(s, 50).toFixed(1)} / ${percentile(s, 99).toFixed(1)} ms`, target: "compare with the conversation search above" });
  } finally {
    await mf.dispose();
  }
}

export async function bench() {
  const rows = [];
  const parts = (process.env.BENCH_CONVERSATION_PARTS || "locomo,scale,fts5").split(",");
  if (parts.includes("locomo")) await locomoPart(rows);
  if (parts.includes("scale")) await scalePart(rows);
  if (parts.includes("fts5")) await fts5Part(rows);
  return rows;
}

// Run alone: `node bench/conversations.mjs`.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await bench()) console.log(`${r.name}: ${r.value}${r.target ? ` (target ${r.target})` : ""}`);
}
