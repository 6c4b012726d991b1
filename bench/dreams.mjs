// Bench piece: dreaming and recall evidence.
// - Recording recall evidence: workerd CPU of memory searches that record
//   their hits (what memory_search and recall do in a turn) minus the same
//   searches that do not (the owner's searches), per call and per turn.
// - Selecting a sweep's candidates over 10,000 notes in V8 (hearth-memory
//   as bare wasm32, as bench/memory.mjs builds it): every note with
//   evidence past the count gates (the worst case) and a full MEMORY.md.
// - An idle night (nothing new): LLM calls and tokens of a sweep in workerd.
//
//   node bench/dreams.mjs
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startHearth } from "../tests/support/hearth.mjs";
import { cpuMeasurable, workerdCpuMeter } from "../tests/support/workerd-cpu.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const mark = (ok) => (ok ? " ✓" : " ✗");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** workerd CPU per memory search, recording its hits or not (alternating windows). */
export async function recordingCost({ calls = 1500, notes = 400 } = {}) {
  const h = await startHearth({ bindings: { HEARTBEAT_ENABLED: "false" } });
  try {
    const ns = await h.mf.getDurableObjectNamespace("AGENT");
    const agent = ns.get(ns.idFromName("main"));
    const post = async (p, body) => {
      const r = await agent.fetch(`https://agent${p}?agent=main`, { method: "POST", body: JSON.stringify(body) });
      if (r.status !== 200) throw new Error(`${p}: ${r.status} ${await r.text()}`);
      return r.json();
    };
    const words = ["tea", "olga", "bogota", "picnic", "lake", "plants", "water", "monday", "sister", "lima"];
    for (let i = 0; i < notes; i++) {
      const content = `note ${i}: ${words[i % 10]} ${words[(i * 3) % 10]} and ${words[(i * 7) % 10]} remembered on day ${i}`;
      await post("/memory/op", { store: "main", op: { op: "add", name: `n${i}`, content, kind: "note", created_at: 1 } });
    }
    const search = (record, i) => post("/memory/search", { store: "main", query: `${words[i % 10]} ${words[(i + 3) % 10]}`, k: 5, record });
    // Warm both paths (compilation, the evidence rows read into RAM).
    for (let i = 0; i < 300; i++) await search(i % 2 === 0, i);
    if (!cpuMeasurable()) return null;
    const meter = workerdCpuMeter();
    const window = async (record) => {
      await sleep(50);
      const c0 = meter.read();
      for (let i = 0; i < calls; i++) await search(record, i);
      return (meter.read() - c0) / calls;
    };
    const off = [], on = [];
    for (let round = 0; round < 3; round++) {
      off.push(await window(false));
      on.push(await window(true));
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[1];
    return { perCallMs: median(on) - median(off), withMs: median(on), withoutMs: median(off), calls, hitsPerCall: 5 };
  } finally {
    await h.close();
  }
}

/** The V8 selection over 10,000 notes. */
export function selectionInV8({ notes = 10000 } = {}) {
  const dir = path.join(ROOT, "bench/memory/wasm-bench");
  execFileSync("cargo", ["build", "--quiet", "--release", "--target", "wasm32-unknown-unknown"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  const wasm = readFileSync(path.join(dir, "target/wasm32-unknown-unknown/release/hearth_memory_wasm_bench.wasm"));
  const w = new WebAssembly.Instance(new WebAssembly.Module(wasm), {}).exports;
  if (w.notes_build(notes) === 0) throw new Error("build failed");
  const rows = w.dream_prepare();
  const times = [];
  let chosen = 0;
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    chosen = w.dream_select();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { notes, rows, chosen, medianMs: times[4], maxMs: times[8] };
}

/** An idle night in workerd: the tick's sweep with nothing new. */
export async function idleNight() {
  const h = await startHearth({ bindings: { HEARTBEAT_ENABLED: "false", ADMIN_TOKEN: "bench" } });
  try {
    await h.putFile("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
    const worker = await h.mf.getWorker();
    const t = Date.now();
    await worker.scheduled({ scheduledTime: t, cron: "*/5 * * * *" });
    const view = await h.until(async () => {
      const r = await h.fetch("/api/agents/main/dreams", { headers: { authorization: "Bearer bench" } });
      const d = await r.json();
      return d.lastCheckedTick === t && d;
    }, { what: "the sweep" });
    const usage = await (await h.fetch("/api/agents/main/usage?period=all", { headers: { authorization: "Bearer bench" } })).json();
    return { outcome: view.last?.outcome, llmCalls: h.llm.requests.length, tokens: usage.byKind?.dreaming?.tokens ?? 0 };
  } finally {
    await h.close();
  }
}

export async function bench() {
  const rows = [];
  const rec = await recordingCost();
  if (rec) {
    // A turn records at most twice: recall into the message, and the model's memory_search.
    const perTurn = 2 * rec.perCallMs;
    rows.push({
      name: `recording recall evidence, workerd CPU (searches of ${rec.hitsPerCall} hits, recorded − not; ${rec.calls} calls × 3 windows)`,
      value: `${(rec.perCallMs * 1000).toFixed(1)} µs per recorded search; ${perTurn.toFixed(3)} ms per turn (recall + one memory_search)`,
      target: `≤ 0.1 ms per turn${mark(perTurn <= 0.1)}`,
    });
  } else {
    rows.push({ name: "recording recall evidence, workerd CPU", value: "n/a (reads Linux /proc)" });
  }
  const sel = selectionInV8();
  rows.push({
    name: `dreaming: candidates selected over ${sel.notes} notes in V8 (all ${sel.rows} with evidence past the count gates, MEMORY.md full; median of 9)`,
    value: `${sel.medianMs.toFixed(2)} ms (max ${sel.maxMs.toFixed(2)} ms, ${sel.chosen} chosen)`,
    target: `≤ 20 ms${mark(sel.medianMs <= 20)}`,
  });
  const idle = await idleNight();
  rows.push({
    name: "dreaming: an idle night (nothing new) in workerd",
    value: `${idle.llmCalls} LLM calls, ${idle.tokens} tokens (${idle.outcome})`,
    target: `0 tokens${mark(idle.llmCalls === 0 && idle.tokens === 0)}`,
  });
  return rows;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.table(await bench());
}
