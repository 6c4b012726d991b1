// Bench piece: what checking who may talk costs on the hot path (issue 34).
// In one workerd, warm: a turn of a person in ALLOW_FROM (the settings), of
// a person let in from the chat (/approve: found in the isolate's copy of
// the roster, no Agent object call), and of the owner; workerd CPU per turn
// in alternating windows (so drift lands on both), and the webhook's ack
// time. Then a stranger's message (the one kind that asks the Agent
// object's door): its ack and CPU. Run against an older build (one without
// the roster: the chat rows are skipped) for the before/after.
// `node bench/people.mjs` (or `npm run bench -- people`).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FRIEND, OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { percentile } from "../tests/support/stats.mjs";
import { cpuMeasurable, workerdCpuMeter } from "../tests/support/workerd-cpu.mjs";

const PAT = 626262; // let in from the chat
const STRANGERS = 40;
const WINDOW = 30;
const ROUNDS = 3;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);
const ms = (x) => (Number.isNaN(x) ? "n/a" : `${x.toFixed(2)} ms`);

async function turn(h, from, text) {
  const want = h.telegram.sent().length + 1;
  const t0 = performance.now();
  const res = await h.sendUpdate(tgUpdate({ from, text }));
  const ack = performance.now() - t0;
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.telegram.untilSent(want, { timeoutMs: 20000 });
  return ack;
}

/** Lets PAT in the way the owner does; false on a build without the roster. */
async function approvePat(h) {
  await h.sendUpdate(tgUpdate({ from: PAT, text: "hello?" }));
  const code = await h.until(() => h.telegram.sent().map((r) => String(r.body.text).match(/this code: ([A-Z0-9]{8})/)?.[1]).find(Boolean), { timeoutMs: 3000 }).catch(() => null);
  if (!code) return false;
  await turn(h, OWNER, `/approve ${code}`);
  return true;
}

export async function bench() {
  const rows = [];
  const h = await startHearth();
  try {
    await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
    const roster = await approvePat(h);
    const kinds = [["ALLOW_FROM", FRIEND], ...(roster ? [["let in from the chat", PAT]] : []), ["owner (OWNER_IDS)", OWNER]];
    for (const [, from] of kinds) for (let i = 0; i < 40; i++) await turn(h, from, `warm ${i}`);
    const cpu = Object.fromEntries(kinds.map(([k]) => [k, []]));
    const acks = Object.fromEntries(kinds.map(([k]) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [kind, from] of kinds) {
        await sleep(100);
        const meter = cpuMeasurable() ? workerdCpuMeter() : null;
        const c0 = meter?.read() ?? NaN;
        for (let i = 0; i < WINDOW; i++) acks[kind].push(await turn(h, from, `bench ${round} ${i}`));
        await sleep(100);
        cpu[kind].push(((meter?.read() ?? NaN) - c0) / WINDOW);
      }
    }
    for (const [kind] of kinds) {
      rows.push({ name: `warm DM turn, sender ${kind}: workerd CPU per turn (median of ${ROUNDS} windows of ${WINDOW})`, value: ms(median(cpu[kind])) });
      rows.push({ name: `  its webhook ack p50 (${ROUNDS * WINDOW} turns)`, value: ms(median(acks[kind])) });
    }
    // Strangers: each message asks the Agent object (the door); the cooldown
    // keeps the sends to one per stranger.
    const strangerAcks = [];
    await sleep(100);
    const meter = cpuMeasurable() ? workerdCpuMeter() : null;
    const c0 = meter?.read() ?? NaN;
    for (let i = 0; i < STRANGERS; i++) {
      const t0 = performance.now();
      const res = await h.sendUpdate(tgUpdate({ from: 880000 + (i % 4), text: `hi ${i}` }));
      strangerAcks.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    }
    await sleep(300);
    rows.push({ name: `a stranger's message (no LLM call; ${STRANGERS} from 4 strangers): webhook ack p50`, value: ms(median(strangerAcks)) });
    rows.push({ name: "  workerd CPU per stranger message (door call, notices included)", value: ms(((meter?.read() ?? NaN) - c0) / STRANGERS) });
  } finally {
    await h.close();
  }
  return rows;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) console.log(`${r.name}: ${r.value}`);
}
