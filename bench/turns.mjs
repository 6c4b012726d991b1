// Bench piece: what one turn costs in workerd (Miniflare, instant LLM and
// Telegram stand-ins): workerd CPU per turn in a short and a ~400-message
// session and per tool round, per-turn wall time, webhook ack latency, and the
// cold path beside the JS I/O floor: the first /health and the first turn
// after a fresh boot, the first turn of a new session object in a warm
// isolate, the R2 operations of those turns; and turns in the order sent when
// their webhooks overtake each other, and what that ordering adds to a turn.
// `BENCH_ONLY=turns npm run bench` runs only this (quick, while optimising).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { coldMiniflare, postTelegram } from "../tests/support/cold.mjs";
import { burst, inPlace } from "../tests/support/burst.mjs";
import { FRIEND, OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { startLlm } from "../tests/support/llm.mjs";
import { startTelegram } from "../tests/support/telegram.mjs";
import { cpuMeasurable, workerdCpuMeter, workerdPids, workerdSchedMeter } from "../tests/support/workerd-cpu.mjs";
import { percentile } from "../tests/support/stats.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const rows = [];
const row = (name, value, target = "") => rows.push({ name, value: String(value), target });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SESSION = "agent:main:main";
const ms = (x) => (Number.isNaN(x) ? "n/a (reads Linux /proc)" : `${x.toFixed(1)} ms`);
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => percentile(sorted(xs), 50);
// Targets of the figures below; a row shows whether it is met.
const mark = (ok) => (ok ? " ✓" : " ✗");

/** One turn (the owner's unless `from` says): webhook → the reply reaching the Telegram stand-in. `script` queues LLM answers. */
async function turn(h, text, script = [], from = OWNER) {
  if (script.length) h.llm.push(...script);
  const want = h.telegram.sent().length + 1;
  const t0 = performance.now();
  const res = await h.sendUpdate(tgUpdate({ from, text }));
  const ack = performance.now() - t0;
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.telegram.untilSent(want, { timeoutMs: 20000 });
  return { ack, wall: performance.now() - t0 };
}

// Off Linux there is no /proc to read: the CPU rows then say so.
const cpuMeter = () => (cpuMeasurable() ? workerdCpuMeter() : { read: () => NaN, resolutionMs: NaN });
const historyLength = async (h) => (await h.sessionStatus(SESSION)).messages.length;

// After a reply the Session may still write the turn down; waiting this long
// before each CPU reading puts that tail in the window of its own turn.
const TAIL_MS = 100;

/**
 * Runs `n` turns and measures workerd CPU over them: user+sys of the workerd
 * processes from before the first turn to after the last, minus what workerd
 * burns over an idle stretch of the same length right after (timers, the
 * runtime's own housekeeping), divided by `n`.
 */
async function cpuWindow(h, n, makeTurn) {
  const history0 = await historyLength(h);
  await sleep(TAIL_MS);
  const meter = cpuMeter();
  const t0 = performance.now();
  const c0 = meter.read();
  const turns = [];
  for (let i = 0; i < n; i++) turns.push(await makeTurn(i));
  await sleep(TAIL_MS);
  const c1 = meter.read();
  const span = performance.now() - t0;
  const idle0 = meter.read();
  await sleep(span);
  const idle = meter.read() - idle0;
  return {
    history: `${history0}→${await historyLength(h)}`,
    cpuPerTurn: (c1 - c0 - idle) / n,
    idleMsPerSecond: (idle / span) * 1000,
    resolutionPerTurn: meter.resolutionMs / n,
    walls: turns.map((t) => t.wall),
    acks: turns.map((t) => t.ack),
  };
}

const WINDOW = 30; // turns per CPU window
const WARMUP = 5; // plain turns first: history ~10 messages (a turn adds the user's and the reply)
const LONG = 200; // plain turns before the second window: history ~400
const READ_SOUL = { toolCall: { name: "read_file", input: { path: "SOUL.md" } } };

/**
 * V8 compiles the WASM in tiers: for about the first 40 turns of a new workerd
 * it is still optimising hot functions in the background, which costs CPU and
 * would land in the short-history window. Warm it with turns in another chat
 * (FRIEND's DM), so the owner's session still starts with an empty history.
 * Returns the CPU per turn of the first WINDOW of them: what a cold isolate costs.
 */
async function warmUp(h) {
  const meter = cpuMeter();
  const c0 = meter.read();
  for (let i = 0; i < WINDOW; i++) await turn(h, `warm ${i}`, [], FRIEND);
  await sleep(TAIL_MS);
  const cold = (meter.read() - c0) / WINDOW;
  for (let i = 0; i < 20; i++) await turn(h, `warm plain ${i}`, [], FRIEND);
  for (let i = 0; i < 20; i++) await turn(h, `warm tool ${i}`, [READ_SOUL, { text: "read it" }], FRIEND);
  return cold;
}

async function plainTurns() {
  const h = await startHearth();
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    const cold = await warmUp(h);
    row(`workerd CPU per plain turn, first ${WINDOW} turns of a new workerd (another chat; no idle subtracted)`, ms(cold));
    let i = 0;
    const plain = () => turn(h, `bench ${i++}`);
    while (i < WARMUP) await plain();
    const short = await cpuWindow(h, WINDOW, plain);
    while (i < LONG) await plain();
    const long = await cpuWindow(h, WINDOW, plain);
    const method = `user+sys of workerd ÷ ${WINDOW} turns, minus idle of equal length`;
    const cap = Math.min(6, 1.2 * short.cpuPerTurn);
    row(`workerd CPU per plain turn, history ${short.history} (${method})`, ms(short.cpuPerTurn));
    row(
      `workerd CPU per plain turn, history ${long.history} (${method})`,
      ms(long.cpuPerTurn),
      `≤ 6 ms and ≤ 1.2 × ${short.cpuPerTurn.toFixed(1)} ms${mark(long.cpuPerTurn <= cap)}`,
    );
    row(`  (clock resolution per turn; workerd idle CPU)`, `±${ms(long.resolutionPerTurn)}; ${ms(long.idleMsPerSecond)} per s`);
    for (const [w, target] of [
      [short, ""],
      [long, "p50 ≤ 12 ms"],
    ]) {
      const walls = sorted(w.walls);
      const p50 = percentile(walls, 50);
      row(
        `per-turn wall, webhook → reply, instant LLM, history ${w.history} (n=${walls.length})`,
        `p50 ${ms(p50)}, p99 ${ms(percentile(walls, 99))}`,
        target && target + mark(p50 <= 12),
      );
    }
    const acks = sorted([...short.acks, ...long.acks]);
    row(`webhook ack latency (n=${acks.length})`, `p50 ${ms(percentile(acks, 50))}, p99 ${ms(percentile(acks, 99))}`);
  } finally {
    await h.close();
  }
}

async function toolTurns() {
  const h = await startHearth();
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    await warmUp(h);
    for (let i = 0; i < WARMUP; i++) await turn(h, `bench ${i}`);
    // Two model calls per turn: a read_file of SOUL.md, then the answer.
    const w = await cpuWindow(h, WINDOW, (i) => turn(h, `tool ${i}`, [READ_SOUL, { text: `read it ${i}` }]));
    row(
      `workerd CPU per tool-round turn (read_file, then text), history ${w.history} (user+sys ÷ ${WINDOW} turns, minus idle)`,
      ms(w.cpuPerTurn),
    );
  } finally {
    await h.close();
  }
}

// ---------------------------------------------------------------- cold path
// The turn most users get lands on an evicted object, often in a fresh
// isolate. Each figure is taken for Hearth and for the JS I/O floor
// (bench/floor/worker.mjs: a plain JS Worker doing the same R2 reads, SQLite
// statements, object calls and fetches as a Hearth turn) in the same run,
// alternating, with the same stand-ins, so the ratio is Hearth's own work.
// (GSV, the TypeScript agent, runs beside Hearth in the versus piece, with the
// settings users get: these rows keep the order hold off, as the floor has none.)

const BOOTS = 6;
const NEW_WARM = 10; // new chats first, so the code of a DM's turn is compiled
const NEW_MEASURED = 20;
const CHATS = Array.from({ length: NEW_WARM + NEW_MEASURED }, (_, i) => 5000 + i);
const BUILD = () => ({ js: fs.readFileSync(path.join(ROOT, "build/index.js"), "utf8"), wasm: fs.readFileSync(path.join(ROOT, "build/index_bg.wasm")) });
const KINDS = [
  { name: "Hearth", spec: BUILD },
  { name: "JS I/O floor", spec: () => ({ floor: true }) },
];

/** A booted Miniflare of `kind` with its stand-ins and a precise CPU meter over its workerd. */
async function boot(kind, telegram, llm) {
  const before = new Set(workerdPids());
  const mf = await coldMiniflare({ ...kind.spec(), telegram, llm, allow: CHATS });
  await (await mf.getR2Bucket("BUCKET")).put("agents/main/SOUL.md", "# Soul\nBrief.");
  const meter = workerdSchedMeter(workerdPids().filter((p) => !before.has(p)));
  return { mf, meter, telegram };
}

/** One Telegram message from `from` → its reply: wall time, and workerd CPU up to the turn's tail. */
async function coldTurn({ mf, meter, telegram }, from, text) {
  const want = telegram.sent().length + 1;
  await sleep(20);
  const c0 = meter.read();
  const t0 = performance.now();
  await postTelegram(mf, from, text);
  await telegram.untilSent(want, { timeoutMs: 20000 });
  const wall = performance.now() - t0;
  await sleep(TAIL_MS);
  return { wall, cpu: meter.read() - c0 };
}

/** The R2 operations a session's last workspace load made (the Agent object's for its start included). */
async function r2Ops(mf, key) {
  const ns = await mf.getDurableObjectNamespace("SESSION");
  return (await (await ns.get(ns.idFromName(key)).fetch("https://session/status?brief")).json()).workspaceR2Ops;
}

const fmt = (x) => `${x.toFixed(1)} ms`;
const pair = (h, f) => `${fmt(h)} vs ${fmt(f)} (× ${(h / f).toFixed(2)})`;

async function coldPath() {
  const telegram = await startTelegram();
  const llm = await startLlm();
  const by = Object.fromEntries(KINDS.map((k) => [k.name, { health: [], healthCpu: [], first: [], firstCpu: [], ops: [] }]));
  try {
    for (let b = 0; b < BOOTS; b++) {
      for (const kind of KINDS) {
        const r = by[kind.name];
        // The first request of a fresh workerd: GET /health.
        let h = await boot(kind, telegram, llm);
        try {
          await sleep(20);
          const c0 = h.meter.read();
          const t0 = performance.now();
          await (await h.mf.dispatchFetch("http://hearth.test/health")).text();
          r.health.push(performance.now() - t0);
          await sleep(20);
          r.healthCpu.push(h.meter.read() - c0);
        } finally {
          await h.mf.dispose();
        }
        // The first message of a fresh workerd: every object new, nothing compiled.
        h = await boot(kind, telegram, llm);
        try {
          const t = await coldTurn(h, OWNER, "hello");
          r.first.push(t.wall);
          r.firstCpu.push(t.cpu);
          if (kind.name === "Hearth") r.ops.push(await r2Ops(h.mf, SESSION));
        } finally {
          await h.mf.dispose();
        }
      }
    }
    // New chats in a warm isolate: each message is the first of a new Session
    // object. Both workerds run at once and take turns (Hearth, floor, Hearth…),
    // so a busier moment of the machine weighs on both alike.
    const live = [];
    try {
      for (const kind of KINDS) {
        const h = await boot(kind, telegram, llm);
        live.push({ kind, h, r: Object.assign(by[kind.name], { newWall: [], newCpu: [], newOps: [] }) });
      }
      for (const { h } of live) {
        await coldTurn(h, OWNER, "warm");
        await coldTurn(h, OWNER, "warm again");
        for (const chat of CHATS.slice(0, NEW_WARM)) await coldTurn(h, chat, "hello there");
      }
      for (const chat of CHATS.slice(NEW_WARM)) {
        for (const { kind, h, r } of live) {
          const t = await coldTurn(h, chat, "hello there");
          r.newWall.push(t.wall);
          r.newCpu.push(t.cpu);
          if (kind.name === "Hearth") r.newOps.push(await r2Ops(h.mf, `agent:main:telegram:dm:${chat}`));
        }
      }
    } finally {
      for (const { h } of live) await h.mf.dispose();
    }
  } finally {
    await telegram.close();
    await llm.close();
  }
  const H = by.Hearth;
  const F = by["JS I/O floor"];
  const m = (xs) => median(xs);
  row(`first GET /health after a fresh boot, Hearth vs the JS I/O floor (median of ${BOOTS} boots): wall`, pair(m(H.health), m(F.health)));
  row(`  the same, workerd CPU`, pair(m(H.healthCpu), m(F.healthCpu)));
  const first = m(H.first);
  row(
    `first turn after a fresh boot (new Miniflare, webhook → reply; median of ${BOOTS} boots), Hearth vs the JS I/O floor: wall`,
    `${pair(first, m(F.first))}; Hearth ${sorted(H.first)[0].toFixed(0)}–${sorted(H.first).at(-1).toFixed(0)} ms`,
    `≤ 45 ms${mark(first <= 45)}; beside GSV: the versus piece`,
  );
  row(`  the same, workerd CPU (all threads, to the turn's tail)`, pair(m(H.firstCpu), m(F.firstCpu)));
  row(
    `  R2 operations of that turn (every object and cache cold: the Agent object lists and reads the workspace)`,
    `${m(H.ops)} (the JS I/O floor makes the same)`,
  );
  const cpu = m(H.newCpu);
  const floorCpu = m(F.newCpu);
  row(
    `first turn of a new session object, warm isolate (new Telegram chats, median of ${NEW_MEASURED}): workerd CPU, Hearth vs the JS I/O floor`,
    pair(cpu, floorCpu),
    `≤ 1.5 × the floor${mark(cpu <= 1.5 * floorCpu)}; beside GSV: the versus piece`,
  );
  row(`  the same, wall (webhook → reply)`, pair(m(H.newWall), m(F.newWall)));
  const maxOps = Math.max(...H.newOps);
  row(
    `  R2 operations of that turn (the Agent object hands the workspace over; max of ${NEW_MEASURED})`,
    `${maxOps}`,
    `≤ 3${mark(maxOps <= 3)}`,
  );
}

// Fresh chats for the order rows: a burst, a reset in a burst, turns that
// follow each other, and two chats taking turns.
const ORDER = { burst: 5201, reset: 5202, follow: 5203, gapA: 5204, gapB: 5205 };
const ORDER_N = 20; // sequential turns per latency figure

/** The answers the bot sent to `chat`, in order. */
const answersTo = (h, chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);

/** `n` messages 15 ms apart whose webhooks overtake each other (tests/support/burst.mjs); how many answers stand where sent. */
async function orderedBurst(h, chat, texts, seed) {
  const updates = texts.map((text) => tgUpdate({ from: chat, text }));
  const { responses, overtaken } = await burst(texts.length, (i) => h.sendUpdate(updates[i]), seed);
  if (responses.some((r) => r.status !== 200)) throw new Error("a webhook was not acknowledged");
  await h.until(() => answersTo(h, chat).length >= texts.length, { what: `${texts.length} answers`, timeoutMs: 60000 });
  const got = answersTo(h, chat);
  const want = texts.map((t, i) => (t === "/reset" ? got[i] : `echo: ${t}`));
  return { inPlace: inPlace(got, want), overtaken, resetAt: got.findIndex((t) => t.startsWith("🧹")) };
}

/**
 * Turns in the order sent (the e2e cases of tests/order.test.mjs, here as
 * figures), and what ordering adds to one turn's latency: a message whose
 * Telegram update follows one already taken starts at once, and so does one
 * after a gap (the update before it went to another chat: two chats taking
 * turns), since the webhook saw that update arrive (docs/order.md).
 */
async function orderRows() {
  const allow = Object.values(ORDER).map((c) => `telegram:${c}`).join(",");
  const h = await startHearth({ bindings: { ALLOW_FROM: allow } });
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    for (let i = 0; i < 20; i++) await turn(h, `warm ${i}`);
    h.llm.state.defaultDelayMs = 20; // each turn takes a while: messages queue up behind it
    const thirty = await orderedBurst(h, ORDER.burst, Array.from({ length: 30 }, (_, i) => `K-${i}`), 23);
    row(
      `turns in send order, 30 messages 15 ms apart (webhooks overlapping; ${thirty.overtaken} left after one sent later)`,
      `${thirty.inPlace}/30`,
      `30/30${mark(thirty.inPlace === 30)}`,
    );
    h.llm.state.responder = (body) => (JSON.stringify(body.messages.at(-1)).includes("about to be archived") ? { text: "NONE" } : null);
    const texts = Array.from({ length: 20 }, (_, i) => (i === 10 ? "/reset" : `R-${i}`));
    const reset = await orderedBurst(h, ORDER.reset, texts, 7);
    row(
      `turns in send order, 20 messages with a /reset in the middle in a burst (${reset.overtaken} overtaken; reset answered ${reset.resetAt + 1}th)`,
      `${reset.inPlace}/20`,
      `20/20, reset 11th${mark(reset.inPlace === 20 && reset.resetAt === 10)}`,
    );
    h.llm.state.defaultDelayMs = 0;
    h.llm.state.responder = null;
    const walls = async (chats) => {
      const out = [];
      for (let i = 0; i <= ORDER_N; i++) {
        const t = await turn(h, `order ${i}`, [], chats[i % chats.length]);
        if (i > 0) out.push(t.wall); // the first of a chat follows nothing of it
      }
      return percentile(sorted(out), 50);
    };
    const follow = await walls([ORDER.follow]);
    const gap = await walls([ORDER.gapA, ORDER.gapB]);
    row(`what ordering adds to a turn: a message whose Telegram update follows one taken (n=${ORDER_N}, wall p50)`, ms(follow), "no hold");
    row(
      `  after a gap (two chats taking turns: the update before each went to the other chat) (n=${ORDER_N}, wall p50)`,
      `${ms(gap)} (+${(gap - follow).toFixed(0)} ms)`,
      `no hold (the webhook saw every update before it arrive)${mark(gap - follow < 50)}`,
    );
  } finally {
    await h.close();
  }
}

async function turnCosts() {
  await coldPath();
  // BENCH_TURNS=cold: the cold-path rows only (quick, while working on them).
  if (process.env.BENCH_TURNS === "cold") return;
  await plainTurns();
  await toolTurns();
  await orderRows();
}

export async function bench() {
  rows.length = 0;
  // Wall times (not CPU times) grow with whatever else the machine runs: say how busy it was.
  const load0 = os.loadavg()[0];
  await turnCosts();
  row(`machine load during the turn rows (1-min average, start → end; ${os.cpus().length} CPUs)`, `${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}`);
  return rows;
}
