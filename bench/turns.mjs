// Bench piece: what one turn costs in workerd (Miniflare, instant LLM and
// Telegram stand-ins): workerd CPU per turn in a short and a ~400-message
// session and per tool round, per-turn wall time, webhook ack latency, and the
// first turn after a fresh boot; and turns in the order sent when their
// webhooks overtake each other, and what that ordering adds to a turn.
// `BENCH_ONLY=turns npm run bench` runs only this (quick, while optimising).
import os from "node:os";
import { burst, inPlace } from "../tests/helpers/burst.mjs";
import { FRIEND, OWNER, startHearth, tgUpdate } from "../tests/helpers/hearth.mjs";
import { cpuMeasurable, workerdCpuMeter } from "../tests/helpers/workerd-cpu.mjs";
import { percentile } from "../tests/helpers/stats.mjs";

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

const BOOTS = 5;

/** A new Miniflare (a new workerd, nothing compiled or cached), then the first webhook → reply. */
async function firstTurns() {
  const walls = [];
  for (let b = 0; b < BOOTS; b++) {
    const h = await startHearth();
    try {
      await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
      walls.push((await turn(h, "hello")).wall);
    } finally {
      await h.close();
    }
  }
  const m = median(walls);
  const s = sorted(walls);
  row(
    `first turn after a fresh boot (new Miniflare, webhook → reply; median of ${BOOTS} boots)`,
    `${ms(m)} (${s[0].toFixed(0)}–${s[s.length - 1].toFixed(0)} ms)`,
    `≤ 45 ms${mark(m <= 45)}`,
  );
}

// Fresh chats for the order rows: a burst, a reset in a burst, turns that
// follow each other, and two chats taking turns.
const ORDER = { burst: 5201, reset: 5202, follow: 5203, gapA: 5204, gapB: 5205 };
const ORDER_N = 20; // sequential turns per latency figure

/** The answers the bot sent to `chat`, in order. */
const answersTo = (h, chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);

/** `n` messages 15 ms apart whose webhooks overtake each other (tests/helpers/burst.mjs); how many answers stand where sent. */
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
 * Telegram update follows one already taken starts at once; after a gap (the
 * update before it went to another chat: the first message of a chat, two
 * chats taking turns; and every message of a platform without gapless ids
 * reaching an idle session) it waits ORDER_HOLD_MS for a straggler.
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
      `  after a gap (two chats taking turns; so every idle Slack/Discord/WhatsApp/email message) (n=${ORDER_N}, wall p50)`,
      `${ms(gap)} (+${(gap - follow).toFixed(0)} ms)`,
      "≈ ORDER_HOLD_MS (100)",
    );
  } finally {
    await h.close();
  }
}

async function turnCosts() {
  await firstTurns();
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
