// Bench piece: Hearth beside GSV (the TypeScript agent on the same platform,
// bench/gsv/) and beside the JS I/O floor (bench/floor/worker.mjs), from one
// run, each in its own workerd, with the same instant LLM and Telegram
// stand-ins and the same workspace, and the settings users get (Hearth's
// order hold included). The issue-37 rows:
//
// - the first message of a new conversation (a new Session object in a warm
//   isolate): wall and workerd CPU. Hearth and the floor: a new friend's DM;
//   GSV: a new group chat (its default puts every DM in the main session);
// - the first turn of the main session after a boot: a new workerd on the
//   storage of the one before (a deploy, an eviction), and on empty storage
//   (a first message ever; GSV's storage then holds only its settings);
// - workerd CPU of a warm plain turn of the main session, at a short history
//   and at ~400 messages;
// - turns in the order sent when 30 webhooks 15 ms apart overtake each other.
//
// Turns are taken in turn (Hearth, GSV, floor, Hearth…) so that a busier
// moment of the machine weighs on all alike. CPU is every thread of the
// system's own workerd (schedstat, ns), minus what that workerd burns idle
// over the same time. Without GSV_REPO (bench/gsv/gsv.mjs) GSV's figures are
// skipped and the rows compare with the floor only.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { coldMiniflare } from "../tests/support/cold.mjs";
import { burst, inPlace } from "../tests/support/burst.mjs";
import { OWNER, SECRET, tgUpdate } from "../tests/support/hearth.mjs";
import { startLlm } from "../tests/support/llm.mjs";
import { startTelegram } from "../tests/support/telegram.mjs";
import { percentile } from "../tests/support/stats.mjs";
import { idleRate, workerdMainThreadMeter, workerdPids, workerdSchedMeter } from "../tests/support/workerd-cpu.mjs";
import { gsvBundle, gsvMissing, GSV_COMMIT, startGsv } from "./gsv/gsv.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOUL = "# Soul\nBrief.";
const BOOTS = Number(process.env.VERSUS_BOOTS || 5);
const NEW_WARM = 10;
const NEW_MEASURED = 20;
const WARM_TURNS = 20; // owner turns before the warm windows (history ~40)
const WINDOWS = 3; // warm windows per system, taken in turn
const WINDOW = 15; // turns per window
const LONG_TURNS = 200; // owner turns before the long-history windows (history ~400 messages)
const TAIL_MS = 100; // after a reply: the turn's bookkeeping lands in its own window
const CHATS = Array.from({ length: NEW_WARM + NEW_MEASURED + 2 }, (_, i) => 6000 + i);
const BURST_CHAT = CHATS.at(-1);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);
const mark = (ok) => (ok ? " ✓" : " ✗");

/** A booted system: its Miniflare, a CPU meter over its own workerd, and how to send a message. */
async function booted(make) {
  const before = new Set(workerdPids());
  const sys = await make();
  const pids = workerdPids().filter((p) => !before.has(p));
  return { ...sys, meter: workerdSchedMeter(pids), main: workerdMainThreadMeter(pids) };
}

/** Posts a Telegram update to the agent's webhook; throws unless it is acknowledged. */
async function post(mf, update) {
  const res = await mf.dispatchFetch("http://hearth.test/telegram/main", {
    method: "POST",
    headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
    body: JSON.stringify(update),
  });
  await res.text();
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
}

// One bot per system, as in production: each numbers its own updates
// without gaps (tgUpdate's counter is shared by the whole process).
let bots = 0;

function hearthLike(name, spec) {
  const bot = { next: 1_000_000 * ++bots };
  return {
    name,
    async boot({ telegram, llm, persist, seeded }) {
      return booted(async () => {
        const mf = await coldMiniflare({ ...spec(), telegram, llm, allow: CHATS, defaults: true, persist });
        if (!seeded) await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", SOUL);
        // A DM from `from`; `chat`: a new conversation's (a friend's DM).
        const update = (from, text, chat) => ({ ...tgUpdate({ from: chat ?? from, text }), update_id: bot.next++ });
        return {
          send: (from, text, chat) => post(mf, update(from, text, chat)),
          /** Messages numbered in the order of `texts`, sent by `send(i)` in any order. */
          sender: (from, texts, chat) => {
            const updates = texts.map((t) => update(from, t, chat));
            return (i) => post(mf, updates[i]);
          },
          close: () => mf.dispose(),
        };
      });
    },
  };
}

const HEARTH = hearthLike("Hearth", () => ({
  js: fs.readFileSync(path.join(ROOT, "build/index.js"), "utf8"),
  wasm: fs.readFileSync(path.join(ROOT, "build/index_bg.wasm")),
}));
const FLOOR = hearthLike("JS I/O floor", () => ({ floor: true }));
// VERSUS_BASE=<dir with index.js and index_bg.wasm>: another Hearth build in
// the same run (the one before a change), shown beside.
const BASE = process.env.VERSUS_BASE
  ? hearthLike("Hearth base", () => ({
      js: fs.readFileSync(path.join(process.env.VERSUS_BASE, "index.js"), "utf8"),
      wasm: fs.readFileSync(path.join(process.env.VERSUS_BASE, "index_bg.wasm")),
    }))
  : null;
const GSV = {
  name: "GSV",
  async boot({ telegram, llm, persist, seeded }) {
    return booted(async () => {
      const g = await startGsv({ telegram, llm, persist, seed: !seeded });
      return {
        send: (from, text, chat) => g.send(from, text, chat),
        sender: (from, texts, chat) => (i) => g.send(from, texts[i], chat),
        close: () => g.close(),
      };
    });
  },
};

/** One message → its reply at the Telegram stand-in: wall, and workerd CPU to the turn's tail. */
async function timed(sys, telegram, from, text, chat) {
  const want = telegram.sent().length + 1;
  await sleep(20);
  const c0 = sys.meter.read();
  const m0 = sys.main.read();
  const t0 = performance.now();
  await sys.send(from, text, chat);
  await telegram.untilSent(want, { timeoutMs: 20000 });
  const wall = performance.now() - t0;
  await sleep(TAIL_MS);
  const idle = performance.now() - t0;
  return { wall, cpu: sys.meter.read() - c0 - sys.idlePerMs * idle, main: sys.main.read() - m0 - (sys.mainIdlePerMs ?? 0) * idle };
}

function tmpDir(tag) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `hearth-versus-${tag}-`));
}

/** The first turn of the main session after a boot, kept and empty storage. */
async function boots(systems, telegram, llm, by) {
  // Storage a boot starts from: kept (the owner talked before) and empty
  // (for GSV: only its settings, which it keeps in its storage).
  const kept = {};
  const empty = {};
  for (const s of systems) {
    kept[s.name] = tmpDir("kept");
    const k = await s.boot({ telegram, llm, persist: kept[s.name] });
    await timed({ ...k, idlePerMs: 0 }, telegram, OWNER, "hello before the boot");
    await k.close();
    empty[s.name] = tmpDir("empty");
    const e = await s.boot({ telegram, llm, persist: empty[s.name] });
    await e.close();
  }
  for (let b = 0; b < BOOTS; b++) {
    for (const s of systems) {
      for (const [variant, from] of [
        ["kept", kept[s.name]],
        ["empty", empty[s.name]],
      ]) {
        const dir = variant === "kept" ? from : tmpDir("empty-copy");
        if (variant === "empty") fs.cpSync(from, dir, { recursive: true });
        const sys = await s.boot({ telegram, llm, persist: dir, seeded: true });
        try {
          const t = await timed({ ...sys, idlePerMs: 0 }, telegram, OWNER, `hello after boot ${b}`);
          by[s.name][variant].push(t);
        } finally {
          await sys.close();
          if (variant === "empty") fs.rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  }
  for (const d of [...Object.values(kept), ...Object.values(empty)]) fs.rmSync(d, { recursive: true, force: true });
}

/** New conversations, warm plain turns and a burst, all systems up at once. */
async function warm(systems, telegram, llm, by) {
  const live = [];
  try {
    for (const s of systems) live.push({ s, sys: await s.boot({ telegram, llm }) });
    for (const { sys } of live) [sys.idlePerMs, sys.mainIdlePerMs] = await idleRate(sys);
    for (const { sys } of live) {
      await timed(sys, telegram, OWNER, "warm");
      await timed(sys, telegram, OWNER, "warm again");
      for (const chat of CHATS.slice(0, NEW_WARM)) await timed(sys, telegram, chat, "hello there", chat);
    }
    for (const chat of CHATS.slice(NEW_WARM, NEW_WARM + NEW_MEASURED)) {
      for (const { s, sys } of live) by[s.name].fresh.push(await timed(sys, telegram, chat, "hello there", chat));
    }
    // Warm plain turns of the main session: windows at a short history, then at ~400 messages.
    const plain = async (sys, text) => {
      const want = telegram.sent().length + 1;
      await sys.send(OWNER, text);
      await telegram.untilSent(want, { timeoutMs: 20000 });
    };
    const windows = async (into) => {
      for (let w = 0; w < WINDOWS; w++) {
        for (const { s, sys } of live) {
          await sleep(TAIL_MS);
          const c0 = sys.meter.read();
          const m0 = sys.main.read();
          const t0 = performance.now();
          for (let i = 0; i < WINDOW; i++) await plain(sys, `warm ${w}.${i}`);
          await sleep(TAIL_MS);
          const span = performance.now() - t0;
          by[s.name][into].push((sys.meter.read() - c0 - sys.idlePerMs * span) / WINDOW);
          by[s.name][`${into}Main`].push((sys.main.read() - m0 - sys.mainIdlePerMs * span) / WINDOW);
        }
      }
    };
    for (let i = 0; i < WARM_TURNS; i++) for (const { sys } of live) await plain(sys, `plain ${i}`);
    await windows("warm");
    for (let i = WARM_TURNS + WINDOWS * WINDOW; i < LONG_TURNS; i++) for (const { sys } of live) await plain(sys, `plain ${i}`);
    await windows("long");
    // 30 messages 15 ms apart whose requests overtake each other (tests/support/burst.mjs).
    llm.state.defaultDelayMs = 20;
    for (const { s, sys } of live) {
      const texts = Array.from({ length: 30 }, (_, i) => `K-${i}`);
      const start = telegram.sent().length;
      const { overtaken } = await burst(30, sys.sender(BURST_CHAT, texts, BURST_CHAT), 23);
      const mine = () => telegram.sent().slice(start).filter((r) => String(r.body.chat_id) === String(BURST_CHAT));
      const t0 = Date.now();
      while (mine().length < 30 && Date.now() - t0 < 60000) await sleep(20);
      const got = mine().map((r) => String(r.body.text).replace(/^echo: (\[[^\]]*\] )?/, ""));
      by[s.name].order = { inPlace: inPlace(got, texts), overtaken };
    }
    llm.state.defaultDelayMs = 0;
  } finally {
    for (const { sys } of live) await sys.close();
  }
}

export async function bench() {
  const rows = [];
  const row = (name, value, target = "") => rows.push({ name, value: String(value), target });
  const missing = gsvMissing();
  let gsv = null;
  if (!missing) {
    try {
      gsv = gsvBundle();
    } catch (e) {
      row(`GSV ${GSV_COMMIT}`, `not run: its build failed (${String(e.message).split("\n")[0]})`);
    }
  } else {
    row("GSV", missing);
  }
  const systems = [HEARTH, ...(BASE ? [BASE] : []), ...(gsv ? [GSV] : []), FLOOR];
  const by = Object.fromEntries(systems.map((s) => [s.name, { kept: [], empty: [], fresh: [], warm: [], long: [], warmMain: [], longMain: [] }]));
  const telegram = await startTelegram();
  const llm = await startLlm();
  const load0 = os.loadavg()[0];
  try {
    await boots(systems, telegram, llm, by);
    await warm(systems, telegram, llm, by);
  } finally {
    await telegram.close();
    await llm.close();
  }
  const H = by.Hearth;
  const G = by.GSV;
  const F = by["JS I/O floor"];
  const B = by["Hearth base"];
  const ms = (x) => `${x.toFixed(1)} ms`;
  const walls = (xs) => median(xs.map((t) => t.wall));
  const cpus = (xs) => median(xs.map((t) => t.cpu));
  const mains = (xs) => median(xs.map((t) => t.main));
  // "Hearth vs GSV (× r) vs floor (× r)"; the target's ratio against GSV, or, without GSV, against the floor.
  // `b`: the base build's figure (VERSUS_BASE), and its ratio to GSV.
  const beside = (h, g, f, limit, what, b) => {
    const vsG = g === undefined ? null : h / g;
    const base = b === undefined ? "" : `; base build ${ms(b)}${g === undefined ? "" : ` (× ${(b / g).toFixed(2)})`}`;
    const value = `Hearth ${ms(h)}${g === undefined ? "" : `, GSV ${ms(g)} (× ${vsG.toFixed(2)})`}, floor ${ms(f)} (× ${(h / f).toFixed(2)})${base}`;
    const target = limit === null ? "" : vsG === null ? `≤ ${limit} × GSV (GSV not run)` : `≤ ${limit} × GSV${mark(vsG <= limit)}`;
    row(what, value, target);
  };
  beside(walls(H.fresh), G && walls(G.fresh), walls(F.fresh), 1.2, `first message of a new conversation, warm isolate, wall (median of ${NEW_MEASURED})`, B && walls(B.fresh));
  beside(walls(H.kept), G && walls(G.kept), walls(F.kept), 1.5, `first turn of the main session after a boot, storage kept, wall (median of ${BOOTS} boots)`, B && walls(B.kept));
  beside(walls(H.empty), G && walls(G.empty), walls(F.empty), 1.5, `  the same on empty storage (a first message ever), wall`, B && walls(B.empty));
  beside(cpus(H.fresh), G && cpus(G.fresh), cpus(F.fresh), 1.0, `CPU of a new conversation's first turn (workerd, all threads, minus idle; median of ${NEW_MEASURED})`, B && cpus(B.fresh));
  beside(mains(H.fresh), G && mains(G.fresh), mains(F.fresh), null, `  the same, workerd's main thread only (no background compiles or GC)`, B && mains(B.fresh));
  beside(cpus(H.kept), G && cpus(G.kept), cpus(F.kept), null, `  CPU of the first main-session turn after a boot, storage kept`, B && cpus(B.kept));
  beside(median(H.warm), G && median(G.warm), median(F.warm), 0.8, `CPU of a warm plain turn, main session, history ~${2 * WARM_TURNS + 4}→${2 * (WARM_TURNS + WINDOWS * WINDOW) + 4} messages (${WINDOWS} windows of ${WINDOW}, median)`, B && median(B.warm));
  beside(median(H.warmMain), G && median(G.warmMain), median(F.warmMain), null, `  the same, workerd's main thread only`, B && median(B.warmMain));
  beside(median(H.long), G && median(G.long), median(F.long), 0.8, `  the same at history ~${2 * LONG_TURNS + 4}→${2 * (LONG_TURNS + WINDOWS * WINDOW) + 4}`, B && median(B.long));
  beside(median(H.longMain), G && median(G.longMain), median(F.longMain), null, `  the same at ~400, main thread only`, B && median(B.longMain));
  const order = (x) => (x ? `${x.order.inPlace}/30 (${x.order.overtaken} overtaken)` : "n/a");
  row(
    `turns in the order sent, 30 messages 15 ms apart overlapping (main session for GSV)`,
    `Hearth ${order(H)}${G ? `, GSV ${order(G)}` : ""}${B ? `; base build ${order(B)}` : ""}`,
    `Hearth 30/30${mark(H.order?.inPlace === 30)}`,
  );
  if (gsv) row(`GSV ${GSV_COMMIT} upload (its wrangler deploy --dry-run)`, gsv.upload);
  row(`machine load during the versus rows (1-min average, start → end)`, `${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}`);
  return rows;
}
