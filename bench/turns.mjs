// Bench piece: what one turn costs in workerd (Miniflare, instant LLM and
// Telegram stand-ins): workerd CPU per turn in a short and a ~400-message
// session and per tool round, per-turn wall time, webhook ack latency, and the
// first turn after a fresh boot. `BENCH_ONLY=turns npm run bench` runs only
// this (quick, while optimising).
import os from "node:os";
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

async function turnCosts() {
  await firstTurns();
  await plainTurns();
  await toolTurns();
}

export async function bench() {
  rows.length = 0;
  // Wall times (not CPU times) grow with whatever else the machine runs: say how busy it was.
  const load0 = os.loadavg()[0];
  await turnCosts();
  row(`machine load during the turn rows (1-min average, start → end; ${os.cpus().length} CPUs)`, `${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}`);
  return rows;
}
