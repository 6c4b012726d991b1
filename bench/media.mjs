// Media bench: hydration time per MB in WASM, and the media cache's hit rate
// over a scripted conversation. `node bench/media.mjs` prints JSON;
// `benchMedia()` returns the same figures for a bench runner.
//
// What is timed: webhook POST → the LLM stand-in having read (and parsed) the
// request, minus the same for a text-only turn in the same conditions. So:
// - ingest: a photo turn (getFile + download + R2 put + base64 + JSON + send);
// - warm hydration: a text turn whose history holds the image, bytes in the
//   object's cache (base64 + JSON encoding + the larger request);
// - cold hydration: the same right after a restart (adds the R2 read),
//   against a text-only session that is just as cold.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { FRIEND, GROUP, OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { jpegBytes, photoUpdate, serveFile, sessionStatus } from "../tests/support/media.mjs";

const MB = 1024 * 1024;
// The minimum of the repetitions: the machine is shared, so noise only adds time.
const best = (xs) => Math.min(...xs);

async function withHearth(fn) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-bench-media-"));
  const h = await startHearth({ persist: dir });
  try {
    return await fn(h);
  } finally {
    await h.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Sends an update and returns ms until the LLM stand-in has the request, after the reply went out. */
async function timedTurn(h, update, chatId) {
  const before = h.llm.requests.length;
  const replies = h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId).length;
  const t0 = Date.now();
  const res = await h.sendUpdate(update);
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.until(() => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId).length > replies, {
    what: "reply",
    timeoutMs: 60000,
  });
  return h.llm.requests[before].start - t0;
}

async function hydrationFor(sizeMb, reps) {
  return withHearth(async (h) => {
    const text = (from, t) => tgUpdate({ from, text: t });
    // Untimed: the first turn pays the isolate's start.
    await timedTurn(h, text(OWNER, "warm up"), OWNER);
    const base = [];
    for (let i = 0; i < reps; i++) base.push(await timedTurn(h, text(OWNER, `baseline ${i}`), OWNER));
    const bytes = jpegBytes(Math.round(sizeMb * MB));
    const id = serveFile(h, bytes);
    const ingest = await timedTurn(h, photoUpdate(id, bytes.length, { caption: "bench" }), OWNER);
    const warm = [];
    for (let i = 0; i < reps; i++) warm.push(await timedTurn(h, text(OWNER, `warm ${i}`), OWNER));
    // Cold: a restart empties the object's memory; R2 and SQLite stay.
    const coldBase = [];
    const cold = [];
    for (let i = 0; i < reps; i++) {
      await h.restart();
      await h.fetch("/health");
      // A session object just as cold, without media (the group's).
      coldBase.push(await coldText(h));
      cold.push(await timedTurn(h, text(OWNER, `cold ${i}`), OWNER));
    }
    const s = await sessionStatus(h, "agent:main:main");
    const b = best(base);
    return {
      sizeMb,
      baselineMs: b,
      ingestMs: ingest,
      warmMs: best(warm),
      coldMs: best(cold),
      coldBaselineMs: best(coldBase),
      ingestMsPerMb: +((ingest - b) / sizeMb).toFixed(1),
      warmHydrationMsPerMb: +((best(warm) - b) / sizeMb).toFixed(1),
      coldHydrationMsPerMb: +((best(cold) - best(coldBase)) / sizeMb).toFixed(1),
      r2ReadsAfterLastRestart: s.media.r2Reads,
    };
  });
}

// A text-only turn in a cold session object: the group, addressed by mention.
let coldGroupCounter = 0;
async function coldText(h) {
  const t = `@hearth_bot cold ${coldGroupCounter++}`;
  return timedTurn(h, tgUpdate({ from: FRIEND, chat: GROUP, text: t, entities: [{ type: "mention", offset: 0, length: 11 }] }), GROUP);
}

/** 10 turns referencing 2 images (sent in turns 1 and 2), then a restart and 5 more. */
async function hitRate() {
  return withHearth(async (h) => {
    const a = jpegBytes(MB, 1);
    const b = jpegBytes(MB, 2);
    await timedTurn(h, photoUpdate(serveFile(h, a), a.length, { caption: "image A" }), OWNER);
    await timedTurn(h, photoUpdate(serveFile(h, b), b.length, { caption: "image B" }), OWNER);
    for (let i = 3; i <= 10; i++) await timedTurn(h, tgUpdate({ text: `turn ${i}` }), OWNER);
    const warm = (await sessionStatus(h)).media;
    await h.restart();
    for (let i = 11; i <= 15; i++) await timedTurn(h, tgUpdate({ text: `turn ${i}` }), OWNER);
    const cold = (await sessionStatus(h)).media;
    const rate = (m) => +(m.cacheHits / Math.max(1, m.cacheHits + m.r2Reads)).toFixed(3);
    return {
      conversation: "2 images (turns 1-2), 8 text turns; then restart and 5 text turns",
      first10: { hits: warm.cacheHits, r2Reads: warm.r2Reads, hitRate: rate(warm) },
      after_restart_5: { hits: cold.cacheHits, r2Reads: cold.r2Reads, hitRate: rate(cold) },
      llmCalls: h.llm.requests.length,
    };
  });
}

export async function benchMedia({ sizesMb = [1, 3], reps = 5 } = {}) {
  const hydration = [];
  for (const s of sizesMb) hydration.push(await hydrationFor(s, reps));
  return { hydration, lru: await hitRate() };
}

/** Rows for `npm run bench` (bench/run.mjs). */
export async function bench() {
  const { hydration, lru } = await benchMedia();
  const rows = [];
  for (const x of hydration) {
    rows.push({ name: `media ${x.sizeMb} MB image: ingest (getFile + download + R2 put), per MB`, value: `${x.ingestMsPerMb} ms/MB` });
    rows.push({ name: `media ${x.sizeMb} MB image: hydration from cache (base64 + JSON), per MB`, value: `${x.warmHydrationMsPerMb} ms/MB` });
    rows.push({ name: `media ${x.sizeMb} MB image: hydration cold (R2 read + base64 + JSON), per MB`, value: `${x.coldHydrationMsPerMb} ms/MB` });
  }
  rows.push({ name: "media LRU hit rate, 10 turns over 2 images", value: `${(lru.first10.hitRate * 100).toFixed(1)} % (${lru.first10.hits} hits, ${lru.first10.r2Reads} R2 reads)` });
  rows.push({ name: "media LRU hit rate, 5 turns after a cold start", value: `${(lru.after_restart_5.hitRate * 100).toFixed(1)} % (${lru.after_restart_5.hits} hits, ${lru.after_restart_5.r2Reads} R2 reads)` });
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = await benchMedia();
  console.log(JSON.stringify(out, null, 2));
}
