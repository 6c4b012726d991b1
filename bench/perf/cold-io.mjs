#!/usr/bin/env node
// The I/O of a turn, counted: R2 operations, SQLite statements (by object) and
// Durable Object calls of the owner's first turn after a fresh boot, a warm
// turn, a new chat's first turn (a new Session object), and with --restart
// the owner's first turn after the objects were evicted (workerd restarted on
// the same storage). Counting costs time: figures of speed come from
// bench/perf/cold-start.mjs and the bench, not from here.
//
//   node bench/perf/cold-io.mjs [--floor] [--starter] [--restart] [-v]
// --floor: the JS I/O floor (bench/floor/worker.mjs) instead of build/;
// --starter: the starter workspace and the built-in skills in R2 (else SOUL.md only);
// -v: every operation.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { coldSettings, FLOOR_CLASSES, FLOOR_MODULES, postTelegram } from "../../tests/support/cold.mjs";
import { FRIEND, OWNER } from "../../tests/support/hearth.mjs";
import { startLlm } from "../../tests/support/llm.mjs";
import { HEARTH_MODULES, hearthMiniflare, ROOT } from "../../tests/support/miniflare.mjs";
import { startTelegram } from "../../tests/support/telegram.mjs";

const has = (f) => process.argv.includes(f);
const floor = has("--floor");
const worker = floor ? FLOOR_MODULES[0] : HEARTH_MODULES[0];
const wrapper = fs.readFileSync(path.join(ROOT, "bench/perf/count-io.mjs"), "utf8").replace(`from "./worker.mjs"`, `from "./${path.relative(ROOT, worker.path)}"`);
const persist = has("--restart") ? fs.mkdtempSync(path.join(os.tmpdir(), "hearth-cold-io-")) : null;
const telegram = await startTelegram();
const llm = await startLlm();
// The counting wrapper is the main module; the Worker (or the floor) below it.
const boot = async () =>
  (
    await hearthMiniflare({
      modules: [{ type: "ESModule", path: path.join(ROOT, "counted.mjs"), contents: wrapper }, ...(floor ? FLOOR_MODULES : HEARTH_MODULES)],
      // The wrapper exports the objects it counts: the Session and the Agent.
      classes: FLOOR_CLASSES,
      bindings: coldSettings({ telegram, llm }),
      persist,
    })
  ).mf;
let mf = await boot();
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
  mf = await boot();
  await counts();
  show("owner's first turn after the objects were evicted (storage kept)", await turn(OWNER, "back"));
}
await mf.dispose();
await telegram.close();
await llm.close();
if (persist) fs.rmSync(persist, { recursive: true, force: true });
