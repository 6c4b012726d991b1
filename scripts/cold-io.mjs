#!/usr/bin/env node
// The I/O of a turn, counted: R2 operations, SQLite statements (by object) and
// Durable Object calls of the owner's first turn after a fresh boot, a warm
// turn, a new chat's first turn (a new Session object), and with --restart
// the owner's first turn after the objects were evicted (workerd restarted on
// the same storage). Counting costs time: figures of speed come from
// scripts/cold-start.mjs and the bench, not from here.
//
//   node scripts/cold-io.mjs [--floor] [--starter] [--restart] [-v]
// --floor: the JS I/O floor (bench/floor/worker.mjs) instead of build/;
// --starter: the starter workspace and the built-in skills in R2 (else SOUL.md only);
// -v: every operation.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { startLlm, startTelegram } from "../tests/helpers/standins.mjs";
import { postTelegram } from "./lib/cold-miniflare.mjs";
import { FRIEND, OWNER, SECRET } from "../tests/helpers/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const has = (f) => process.argv.includes(f);
const worker = has("--floor") ? "bench/floor/worker.mjs" : "build/index.js";
const wrapper = fs.readFileSync(path.join(ROOT, "scripts/lib/count-io.mjs"), "utf8").replace(`from "./worker.mjs"`, `from "./${worker}"`);
const persist = has("--restart") ? fs.mkdtempSync(path.join(os.tmpdir(), "hearth-cold-io-")) : null;
const telegram = await startTelegram();
const llm = await startLlm();
const options = () => ({
  modulesRoot: ROOT,
  modules: [
    { type: "ESModule", path: path.join(ROOT, "counted.mjs"), contents: wrapper },
    { type: "ESModule", path: path.join(ROOT, worker) },
    ...(has("--floor") ? [] : [{ type: "CompiledWasm", path: path.join(ROOT, "build/index_bg.wasm") }]),
  ],
  compatibilityDate: "2026-04-01",
  r2Buckets: ["BUCKET"],
  durableObjects: { SESSION: { className: "Session", useSQLite: true }, AGENT: { className: "Agent", useSQLite: true } },
  bindings: {
    AGENTS: "main", LLM_PROVIDER: "anthropic", LLM_BASE_URL: llm.base, LLM_MODEL: "claude-test", LLM_API_KEY: "test-llm-key",
    TELEGRAM_API_BASE: telegram.base, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_WEBHOOK_SECRET: SECRET,
    OWNER_IDS: `telegram:${OWNER}`, ALLOW_FROM: `telegram:${FRIEND}`, RESET_DAILY_AT: "off",
    ORDER_HOLD_MS: "0", // as in scripts/lib/cold-miniflare.mjs: the floor does not order messages
  },
  cf: false,
  ...(persist ? { r2Persist: path.join(persist, "r2"), durableObjectsPersist: path.join(persist, "do") } : {}),
});
let mf = new Miniflare(options());
await mf.ready;
const bucket = await mf.getR2Bucket("BUCKET");
if (has("--starter")) {
  const dir = path.join(ROOT, "r2-layout/starter");
  for (const f of fs.readdirSync(dir)) await bucket.put(`agents/main/${f}`, fs.readFileSync(path.join(dir, f), "utf8"));
  for (const s of fs.readdirSync(path.join(ROOT, "skills"))) await bucket.put(`skills/${s}/SKILL.md`, fs.readFileSync(path.join(ROOT, "skills", s, "SKILL.md"), "utf8"));
  await bucket.put(`agents/main/memory/${new Date().toISOString().slice(0, 10)}.md`, "- a note");
} else {
  await bucket.put("agents/main/SOUL.md", "# Soul\nBrief.");
}
const counts = async () => JSON.parse(await (await mf.dispatchFetch("http://hearth.test/__io")).text());
await counts();
async function turn(from, text) {
  const before = telegram.sent().length;
  await postTelegram(mf, from, text);
  await telegram.untilSent(before + 1, { timeoutMs: 20000 });
  await new Promise((r) => setTimeout(r, 150)); // the turn's tail (registry, usage)
  return counts();
}
function show(name, io) {
  console.log(`${name}: R2 ${io.r2.length}, SQL ${io.sql.length}, object calls ${io.calls.length}`);
  if (has("-v")) for (const k of ["calls", "r2", "sql"]) for (const l of io[k]) console.log(`    ${k} ${l}`);
}
console.log(`# ${has("--floor") ? "JS I/O floor" : "Hearth"}${has("--starter") ? ", starter workspace" : ""}`);
show("first turn after a fresh boot (owner)", await turn(OWNER, "hello"));
show("warm turn (owner)", await turn(OWNER, "again"));
show("first turn of a new session object (another chat)", await turn(FRIEND, "hello"));
if (persist) {
  await mf.dispose();
  mf = new Miniflare(options());
  await mf.ready;
  await counts();
  show("owner's first turn after the objects were evicted (storage kept)", await turn(OWNER, "back"));
}
await mf.dispose();
await telegram.close();
await llm.close();
if (persist) fs.rmSync(persist, { recursive: true, force: true });
