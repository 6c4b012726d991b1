// Bench rows for handing work off (issue 33), in workerd with the stand-ins,
// a Telegram DM from the owner each time:
// - delegation: the gap between the asking agent's two model calls around a
//   `delegate` call, less the peer's own model call (strict: everything the
//   call costs beyond the peer's LLM time: the hop to the peer's Session
//   object, its turn's setup and bookkeeping, the answer back); beside it the
//   same gap around a `read_file` call (baseline: a tool round with no peer),
//   and strict − baseline (generous: what the peer adds to a tool round).
//   The first asking (a new delegated session) is shown apart;
// - spawn: from the model's reply that calls `spawn_task` to the chat's
//   answer at the Telegram stand-in (strict), beside a plain turn's model
//   reply → answer (baseline), and strict − baseline (generous);
// - result: from the sub-agent's last model call to its result at the
//   Telegram stand-in (strict), beside the same baseline.
// Clocks: the stand-ins run in this process (Date.now, 1 ms). BENCH_TASKS_N
// sets the runs (default 20, after 3 warm-up runs).
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";

const N = Number(process.env.BENCH_TASKS_N || 20);
const WARM = 3;
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const p50 = (xs) => sorted(xs)[Math.floor((xs.length - 1) / 2)];
const fmt = (x) => `${x.toFixed(1)} ms`;
const mark = (ok) => (ok ? " ✓" : " ✗");
const RESEARCH = "SOUL-RESEARCH-BENCH";

let mode = "plain";
function respond(body) {
  const system = (body.system || []).map((b) => b.text).join("\n");
  const first = JSON.stringify(body.messages[0]?.content ?? "");
  const last = body.messages.at(-1).content;
  const afterTool = Array.isArray(last) && last.some((b) => b.type === "tool_result");
  if (system.includes(RESEARCH)) return { text: "research: 100 degrees." };
  if (first.includes("[Background task") && body.messages.length === 1) return { text: "sub-agent: three findings." };
  if (afterTool || mode === "plain") return { text: "done." };
  if (mode === "delegate") return { toolCall: { name: "delegate", input: { agent: "research", task: "boiling point of water?" } } };
  if (mode === "read") return { toolCall: { name: "read_file", input: { path: "SOUL.md" } } };
  if (mode === "spawn") return { toolCall: { name: "spawn_task", input: { task: "find three things", title: "bench" } } };
  return null;
}

const sent = (h) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === OWNER);

/** One owner message; resolves once `replies` more messages reached the chat. */
async function turn(h, text, replies = 1) {
  const want = sent(h).length + replies;
  const first = h.llm.requests.length;
  await h.sendUpdate(tgUpdate({ from: OWNER, text }));
  await h.until(() => sent(h).length >= want, { what: "the reply", timeoutMs: 30000 });
  await h.settle("agent:main:main");
  await new Promise((r) => setTimeout(r, 30));
  return { calls: h.llm.requests.slice(first), replies: sent(h).slice(-replies) };
}

const isPeer = (r) => (r.body.system || []).some((b) => b.text.includes(RESEARCH));

/** The gap between the asker's two calls, and the peer's call inside it. */
async function toolRound(h, m, i) {
  mode = m;
  const { calls } = await turn(h, `question ${m} ${i}`);
  const own = calls.filter((r) => !isPeer(r));
  const gap = own[1].start - own[0].end;
  const peer = calls.find(isPeer);
  return { gap, peer: peer ? peer.end - peer.start : 0 };
}

/** Model reply → the chat's answer, for a plain turn or a spawning one. */
async function answerGap(h, m, i) {
  mode = m;
  const want = sent(h).length + 1;
  const first = h.llm.requests.length;
  await h.sendUpdate(tgUpdate({ from: OWNER, text: `question ${m} ${i}` }));
  await h.until(() => sent(h).length >= want, { what: "the answer", timeoutMs: 30000 });
  const answer = sent(h)[want - 1];
  const call = h.llm.requests[first];
  const out = { answered: answer.at - call.end };
  if (m === "spawn") {
    await h.until(() => sent(h).length >= want + 1, { what: "the result", timeoutMs: 30000 });
    const result = sent(h)[want];
    const sub = h.llm.requests.slice(first).find((r) => JSON.stringify(r.body.messages[0]?.content ?? "").includes("[Background task"));
    out.delivered = result.at - sub.end;
  }
  await h.settle("agent:main:main");
  await new Promise((r) => setTimeout(r, 30));
  return out;
}

export async function bench() {
  const h = await startHearth({
    bindings: {
      AGENTS: "main,research",
      ALLOWED_DELEGATES__MAIN: "research",
      STREAM_REPLIES: "off",
      ORDER_HOLD_MS: "0",
      SUBAGENTS_MAX: "3",
    },
  });
  try {
    h.llm.state.responder = respond;
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    await h.putFile("agents/research/SOUL.md", `# Soul\n${RESEARCH}`);
    const firstAsk = await toolRound(h, "delegate", 0);
    for (let i = 0; i < WARM; i++) {
      await toolRound(h, "read", i);
      await toolRound(h, "delegate", i);
      await answerGap(h, "plain", i);
      await answerGap(h, "spawn", i);
    }
    const strict = [];
    const base = [];
    const answered = { plain: [], spawn: [] };
    const delivered = [];
    for (let i = 0; i < N; i++) {
      const r = await toolRound(h, "read", 100 + i);
      base.push(r.gap);
      const d = await toolRound(h, "delegate", 100 + i);
      strict.push(d.gap - d.peer);
      answered.plain.push((await answerGap(h, "plain", 100 + i)).answered);
      const s = await answerGap(h, "spawn", 100 + i);
      answered.spawn.push(s.answered);
      delivered.push(s.delivered);
    }
    const [ds, db] = [p50(strict), p50(base)];
    const [ss, sb] = [p50(answered.spawn), p50(answered.plain)];
    const rs = p50(delivered);
    return [
      { name: "delegation: overhead beyond the peer's LLM time, p50 (strict)", value: fmt(ds), target: `≤ 30 ms${mark(ds <= 30)}` },
      { name: "delegation: a tool round with no peer (read_file), p50 (baseline)", value: fmt(db) },
      { name: "delegation: strict − baseline, p50 (generous)", value: fmt(ds - db) },
      { name: "delegation: first asking (new delegated session), strict", value: fmt(firstAsk.gap - firstAsk.peer) },
      { name: "spawn: model reply → the chat's answer, p50 (strict)", value: fmt(ss), target: `≤ 50 ms${mark(ss <= 50)}` },
      { name: "spawn: a plain turn's model reply → answer, p50 (baseline)", value: fmt(sb) },
      { name: "spawn: strict − baseline, p50 (generous)", value: fmt(ss - sb) },
      { name: "sub-agent: last model call → result in the chat, p50 (strict)", value: fmt(rs), target: `≤ 100 ms${mark(rs <= 100)}` },
    ];
  } finally {
    await h.close();
  }
}
