// Bench rows for the HTTP API (issue 13), in workerd with the LLM stand-in:
// - streaming overhead: from the stand-in writing its first text piece to the
//   first `delta` event at an SSE client, and from its last byte to the
//   `done` event (both clocks are this process's: the stand-in runs here);
// - `generate` with an instant LLM against a Telegram turn of the same size
//   (webhook → the reply at the Telegram stand-in).
// BENCH_API_N sets the number of runs (default 40, after 10 warm-up runs).
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { sseReader } from "../tests/support/sse.mjs";

const TOKEN = "bench-admin-token";
const N = Number(process.env.BENCH_API_N || 40);
const WARM = 10;
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const fmt = (x) => `${x.toFixed(1)} ms`;
const mark = (ok) => (ok ? " ✓" : " ✗");

function post(h, path, body) {
  return h.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** One streamed answer: (first delta − first piece written, done − last byte written). */
async function streamOnce(h, i) {
  h.llm.push({ text: "alpha beta gamma delta epsilon zeta eta theta", pieceDelayMs: 15 });
  const res = await post(h, "/api/agents/main/stream", { messages: [{ role: "user", content: `q ${i}` }], threadId: "bench-stream" });
  const sse = sseReader(res);
  const first = await sse.until((e) => e.event === "delta");
  const done = await sse.until((e) => e.event === "done");
  await sse.end();
  const entry = h.llm.requests.at(-1);
  return { first: first.at - entry.firstPieceAt, done: done.at - entry.lastByteAt };
}

// Each measurement starts with both sessions idle: a turn's bookkeeping after
// its reply (the Telegram one's is after the measured moment) must not land
// in the other's time.
async function idle(h) {
  await h.settle("agent:main:api:bench-generate", "agent:main:main");
  await new Promise((r) => setTimeout(r, 30));
}

async function generateOnce(h, i) {
  await idle(h);
  const t0 = performance.now();
  const r = await post(h, "/api/agents/main/generate", { messages: [{ role: "user", content: `question number ${i}` }], threadId: "bench-generate" });
  if (r.status !== 200) throw new Error(`generate answered ${r.status}`);
  await r.json();
  return performance.now() - t0;
}

/** Webhook → the reply at the Telegram stand-in (as the turn rows measure it). */
async function telegramOnce(h, i) {
  await idle(h);
  const want = h.telegram.sent().length + 1;
  const t0 = performance.now();
  await h.sendUpdate(tgUpdate({ from: OWNER, text: `question number ${i}` }));
  await h.telegram.untilSent(want, { timeoutMs: 20000 });
  return performance.now() - t0;
}

export async function bench() {
  const h = await startHearth({ bindings: { ADMIN_TOKEN: TOKEN } });
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    for (let i = 0; i < WARM; i++) await streamOnce(h, i);
    const firsts = [];
    const dones = [];
    for (let i = 0; i < N; i++) {
      const { first, done } = await streamOnce(h, i);
      firsts.push(first);
      dones.push(done);
    }
    // Interleaved, so both see the same machine load; each in its own session.
    for (let i = 0; i < WARM; i++) {
      await generateOnce(h, i);
      await telegramOnce(h, i);
    }
    const gen = [];
    const tg = [];
    for (let i = 0; i < N; i++) {
      gen.push(await generateOnce(h, i));
      tg.push(await telegramOnce(h, i));
    }
    const p50 = (xs) => pct(xs, 50);
    return [
      {
        name: `stream: stand-in's first piece → first delta at the SSE client (p50 / p90, n=${N})`,
        value: `${fmt(p50(firsts))} / ${fmt(pct(firsts, 90))}`,
        target: `p50 ≤ 5 ms${mark(p50(firsts) <= 5)}`,
      },
      {
        name: `stream: stand-in's last byte → done at the SSE client (p50 / p90)`,
        value: `${fmt(p50(dones))} / ${fmt(pct(dones, 90))}`,
        target: `≤ 5 ms${mark(p50(dones) <= 5)}`,
      },
      {
        name: `generate with an instant LLM vs a Telegram turn of the same size (wall p50, n=${N})`,
        value: `${fmt(p50(gen))} vs ${fmt(p50(tg))}`,
        target: `generate ≤ Telegram${mark(p50(gen) <= p50(tg))}`,
      },
    ];
  } finally {
    await h.close();
  }
}

if (process.argv[1] && process.argv[1].endsWith("api.mjs")) {
  for (const r of await bench()) console.log(`${r.name}: ${r.value} ${r.target ?? ""}`);
}
