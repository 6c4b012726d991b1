// The upload's size by feature (issue 23 item 2): which feature's code takes
// how much of the WASM, so growth shows at the change that causes it.
//
//   node bench/size/features.mjs [named.wasm] [--budget] [--top N feature]
//
// How it works: `scripts/build.sh` keeps a copy of the release WASM with its
// name section (target/hearth-named.wasm) before it strips the upload. This
// reads that copy's code section and name section, gives each function to the
// first FEATURES rule whose pattern its (demangled) name matches, and sums the
// bodies per feature. A generic instance goes to the feature named anywhere in
// its name: `serde_json::from_slice::<durable::protocol::memory::Exchange>`
// counts for conversation memory, not for serde. Functions binaryen inlined
// count for the function they were inlined into.
//
// gzip per feature: each feature's bodies, concatenated in module order, are
// gzipped alone, and the total upload's gzip (from `wrangler deploy
// --dry-run`) is shared out in proportion. Data segments (string literals,
// tables) have no names: they are one row. So the rows add up to the upload,
// and one feature's row moves when its code grows.
//
// Maintenance: a new module that is a feature of its own gets a line in
// FEATURES (and a budget); a module that is not named falls into its crate's
// catch-all row ("durable: other", "hearth (Worker glue)"), which has a budget too.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
export const NAMED_WASM = path.join(ROOT, "target/hearth-named.wasm");

/**
 * Feature → name patterns (regular expressions on the demangled function name)
 * and its budget in KiB gzip. First match wins, so specific rules come first.
 * Budgets are today's size plus a little room: a row over its budget is the
 * change to look at.
 */
export const FEATURES = [
  { name: "email channel (MIME reader, mail-parser)", budget: 50, match: [/mail_parser::/, /durable::channels::email/] },
  { name: "slack channel", budget: 12, match: [/durable::channels::slack/] },
  { name: "whatsapp channel", budget: 12, match: [/durable::channels::whatsapp/] },
  { name: "discord channel + gateway", budget: 30, match: [/durable::channels::discord/, /hearth::gateway/, /durable::protocol::gateway/] },
  { name: "telegram channel", budget: 25, match: [/durable::channels::telegram/] },
  { name: "reminders (tool, store, alarm) + posting into a chat", budget: 30, match: [/durable::reminders/, /durable::protocol::reminders/, /durable::agent::reminders/, /durable::session::post/, /durable::channels::later/, /hearth_schedule::moments/, /hearth::api::reminders/] },
  { name: "channels: shared (outbound, access, groups)", budget: 20, match: [/durable::channels::/, /durable::routing/, /durable::inbound/, /hearth::channels/, /hearth::front/] },
  { name: "conversation memory", budget: 45, match: [/durable::memory::conversation/, /hearth_memory::conversation/, /durable::protocol::memory/, /durable::agent::conversations/] },
  { name: "BM25 memory (hearth-memory, tools, recall)", budget: 60, match: [/hearth_memory::/, /durable::memory::/, /unicode_segmentation::/] },
  { name: "dreaming", budget: 25, match: [/durable::dreaming/, /durable::agent::dreams/, /durable::protocol::dreams/] },
  { name: "schedule: heartbeat, cron, time zones (jiff, croner)", budget: 90, match: [/hearth_schedule::/, /durable::scheduled/, /durable::clock/, /\bjiff(_core)?::/, /\bcroner::/] },
  { name: "code mode (run_code)", budget: 25, match: [/durable::codemode/, /hearth::sandbox/] },
  { name: "MCP (client and server)", budget: 35, match: [/durable::mcp/, /hearth::mcp/, /durable::protocol::mcp/] },
  { name: "media (ingest, hydrate, voice)", budget: 20, match: [/durable::media/, /durable::voice/] },
  { name: "web tools (fetch, search)", budget: 15, match: [/durable::web::/] },
  { name: "LLM providers (Anthropic, OpenAI, SSE)", budget: 45, match: [/durable::llm/] },
  { name: "workspace + prompt (yaml, skills, overlay)", budget: 45, match: [/durable::workspace/, /durable::prompt/, /saphyr_parser::/, /durable::text/] },
  { name: "usage + prices", budget: 15, match: [/durable::usage/, /durable::agent::usage/, /durable::protocol::usage/] },
  { name: "handing off: delegate, sub-agents, /tasks", budget: 30, match: [/durable::tasks::/, /durable::agent::tasks/, /durable::protocol::tasks/, /durable::session::(handoff|subagent)/, /durable::settings::tasks/] },
  { name: "session: turn loop, tools, history", budget: 120, match: [/durable::session/, /durable::tools/, /durable::toolkit/, /durable::delivery/, /durable::protocol::session/, /hearth::session_do/] },
  { name: "agent object (registry, pins, notifications)", budget: 45, match: [/durable::agent/, /hearth::agent_do/, /durable::protocol::(agent|pins)/] },
  { name: "HTTP API + console", budget: 60, match: [/hearth::api/, /durable::api/, /durable::protocol::api/, /durable::console/, /hearth::console/] },
  { name: "durable: other (settings, protocol, storage, ports)", budget: 40, match: [/durable::/] },
  { name: "r2-layout (keys, archives, records)", budget: 20, match: [/r2_layout::/] },
  { name: "hearth (Worker glue)", budget: 60, match: [/hearth::/] },
  { name: "serde + serde_json (shared instances)", budget: 70, match: [/serde/] },
  { name: "worker, wasm-bindgen, js-sys, futures", budget: 60, match: [/\bworker(_sys)?::/, /wasm_bindgen/, /js_sys::/, /web_sys::/, /\bfutures/] },
  { name: "crypto (sha2, base64)", budget: 10, match: [/\bsha2::/, /\bbase64::/, /\bdigest::/] },
  { name: "core, alloc, std (fmt, sort, maps, alloc)", budget: 90, match: [/./] },
];
const DATA = { name: "data segments (string literals, tables)", budget: 220 };

function leb(buf, pos) {
  let result = 0, shift = 0, byte;
  do {
    byte = buf[pos++];
    result += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [result, pos];
}

/** The module's functions (index, body bytes), their names, and its data segments. */
export function readModule(buf) {
  let pos = 8, imports = 0;
  const bodies = [], names = new Map(), data = [];
  while (pos < buf.length) {
    const id = buf[pos++];
    let size;
    [size, pos] = leb(buf, pos);
    const end = pos + size;
    if (id === 2) {
      let n, p = pos;
      [n, p] = leb(buf, p);
      for (let i = 0; i < n; i++) {
        let len;
        [len, p] = leb(buf, p); p += len; // module
        [len, p] = leb(buf, p); p += len; // field
        const kind = buf[p++];
        if (kind === 0) { [, p] = leb(buf, p); imports++; }
        else if (kind === 1) { p++; const flags = buf[p++]; [, p] = leb(buf, p); if (flags & 1) [, p] = leb(buf, p); }
        else if (kind === 2) { const flags = buf[p++]; [, p] = leb(buf, p); if (flags & 1) [, p] = leb(buf, p); }
        else if (kind === 3) { p += 2; }
        else if (kind === 4) { p++; [, p] = leb(buf, p); }
      }
    } else if (id === 10) {
      let n, p = pos;
      [n, p] = leb(buf, p);
      for (let i = 0; i < n; i++) {
        let len;
        [len, p] = leb(buf, p);
        bodies.push({ index: imports + i, start: p, size: len });
        p += len;
      }
    } else if (id === 11) {
      let n, p = pos;
      [n, p] = leb(buf, p);
      for (let i = 0; i < n; i++) {
        let flags;
        [flags, p] = leb(buf, p);
        if (flags === 2) [, p] = leb(buf, p);
        if (flags !== 1) { while (buf[p] !== 0x0b) p++; p++; } // init expression
        let len;
        [len, p] = leb(buf, p);
        data.push({ start: p, size: len });
        p += len;
      }
    } else if (id === 0) {
      let len, p = pos;
      [len, p] = leb(buf, p);
      const name = buf.subarray(p, p + len).toString("utf8");
      p += len;
      if (name === "name") {
        while (p < end) {
          const sub = buf[p++];
          let subSize;
          [subSize, p] = leb(buf, p);
          const subEnd = p + subSize;
          if (sub === 1) {
            let n, q = p;
            [n, q] = leb(buf, q);
            for (let i = 0; i < n; i++) {
              let idx, l;
              [idx, q] = leb(buf, q);
              [l, q] = leb(buf, q);
              names.set(idx, buf.subarray(q, q + l).toString("utf8"));
              q += l;
            }
          }
          p = subEnd;
        }
      }
    }
    pos = end;
  }
  return { bodies, names, data };
}

/** Rows per feature: raw code bytes, gzip of its code alone, function count. */
export function attribute(buf) {
  const { bodies, names, data } = readModule(buf);
  if (!names.size) throw new Error("the WASM has no name section: build with scripts/build.sh (it keeps target/hearth-named.wasm)");
  const groups = new Map(FEATURES.map((f) => [f.name, { ...f, raw: 0, chunks: [], fns: [] }]));
  for (const b of bodies) {
    // v0 symbol names carry crate hashes: `durable[1a2b…]::session`.
    const name = (names.get(b.index) || `func${b.index}`).replace(/\[[0-9a-f]{8,}\]/g, "");
    const f = FEATURES.find((f) => f.match.some((re) => re.test(name)));
    const g = groups.get(f.name);
    g.raw += b.size;
    g.chunks.push(buf.subarray(b.start, b.start + b.size));
    g.fns.push({ name, size: b.size });
  }
  const rows = [...groups.values()].map((g) => ({
    name: g.name, budget: g.budget, raw: g.raw, fns: g.fns,
    gz: zlib.gzipSync(Buffer.concat(g.chunks), { level: 9 }).length,
  }));
  const dataBytes = Buffer.concat(data.map((d) => buf.subarray(d.start, d.start + d.size)));
  rows.push({ name: DATA.name, budget: DATA.budget, raw: dataBytes.length, fns: [], gz: zlib.gzipSync(dataBytes, { level: 9 }).length });
  return rows;
}

/** Scales the per-feature gzip so the rows add up to the upload's gzip KiB. */
export function budgetRows(buf, uploadGzipKiB) {
  const rows = attribute(buf);
  const sum = rows.reduce((s, r) => s + r.gz, 0);
  const scale = uploadGzipKiB ? uploadGzipKiB / (sum / 1024) : 1;
  return rows
    .map((r) => ({ ...r, kib: (r.gz / 1024) * scale }))
    .sort((a, b) => b.kib - a.kib);
}

/** Rows for bench/run.mjs's table: one per feature, against its budget. */
export function sizeBudgetRows(uploadGzipKiB) {
  if (!fs.existsSync(NAMED_WASM)) return [{ name: "size by feature", value: "no target/hearth-named.wasm", target: "run scripts/build.sh" }];
  return budgetRows(fs.readFileSync(NAMED_WASM), uploadGzipKiB).map((r) => ({
    name: `size: ${r.name}`,
    value: `${r.kib.toFixed(1)} KiB gz (${(r.raw / 1000).toFixed(0)} kB raw)`,
    target: `≤ ${r.budget} KiB${r.kib <= r.budget ? " ✓" : " ✗"}`,
  }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const file = args.find((a) => a.endsWith(".wasm")) || NAMED_WASM;
  const upload = Number(process.env.UPLOAD_GZIP_KIB || 0) || null;
  const topAt = args.indexOf("--top");
  const rows = budgetRows(fs.readFileSync(file), upload);
  let total = 0, totalRaw = 0;
  for (const r of rows) {
    total += r.kib; totalRaw += r.raw;
    console.log(`${r.kib.toFixed(1).padStart(7)} KiB gz ${(r.raw / 1000).toFixed(1).padStart(8)} kB raw ${String(r.fns.length).padStart(5)} fns  ${r.name}${r.kib > r.budget ? `  (over ${r.budget})` : ""}`);
  }
  console.log(`${total.toFixed(1).padStart(7)} KiB gz ${(totalRaw / 1000).toFixed(1).padStart(8)} kB raw  total${upload ? " (scaled to the upload)" : " (gzip of each row alone)"}`);
  if (topAt >= 0) {
    const n = Number(args[topAt + 1]) || 30;
    const want = args[topAt + 2];
    const fns = rows.filter((r) => !want || r.name.startsWith(want)).flatMap((r) => r.fns.map((f) => ({ ...f, feature: r.name })));
    fns.sort((a, b) => b.size - a.size);
    for (const f of fns.slice(0, n)) console.log(`${String(f.size).padStart(8)}  ${f.name.slice(0, 160)}  [${f.feature.split(" ")[0]}]`);
  }
}
