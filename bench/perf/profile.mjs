#!/usr/bin/env node
// `npm run profile`: a V8 CPU profile of Hearth's plain turns in workerd.
//
// Starts the built Worker in Miniflare with the inspector on, runs warm-up
// turns (and optionally a long history first), profiles the next turns, and
// prints the functions with the most self time. Build with names kept for
// readable WASM frames: `HEARTH_KEEP_NAMES=1 FORCE_BUILD=1 npm run build`.
// The raw profile is written to bench/out/turns.cpuprofile (open it in Chrome
// DevTools → Performance, or speedscope).
//
//   npm run profile [-- --turns 50 --warmup 20 --history 0 --tools]
// (`--tools`: each profiled turn makes a read_file call, then answers.)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { OWNER, startHearth, tgUpdate } from "../../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(args[i + 1]);
};
const TURNS = opt("turns", 50);
const WARMUP = opt("warmup", 20);
const HISTORY = opt("history", 0);
const TOOLS = args.includes("--tools");
const PORT = 9229 + Math.floor(Math.random() * 500);

async function connect() {
  for (let i = 0; i < 50; i++) {
    try {
      const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
      const t = targets.find((x) => x.webSocketDebuggerUrl);
      if (t) {
        const ws = new WebSocket(t.webSocketDebuggerUrl);
        await new Promise((res, rej) => {
          ws.once("open", res);
          ws.once("error", rej);
        });
        let id = 0;
        const pending = new Map();
        ws.on("message", (m) => {
          const msg = JSON.parse(m.toString());
          if (msg.id && pending.has(msg.id)) {
            pending.get(msg.id)(msg);
            pending.delete(msg.id);
          }
        });
        const send = (method, params = {}) =>
          new Promise((res) => {
            const n = ++id;
            pending.set(n, res);
            ws.send(JSON.stringify({ id: n, method, params }));
          });
        return { ws, send, targets };
      }
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no inspector target");
}

async function turn(h, i, withTool = false) {
  if (withTool) h.llm.push({ toolCall: { name: "read_file", input: { path: "SOUL.md" } } }, { text: `read it ${i}` });
  const before = h.telegram.sent().length;
  const res = await h.sendUpdate(tgUpdate({ from: OWNER, text: `profile turn ${i}: how are you today?` }));
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  await h.until(() => h.telegram.sent().length > before, { what: `reply ${i}`, timeoutMs: 20000 });
}

const h = await startHearth({ bindings: { ADMIN_TOKEN: "profile" }, inspectorPort: PORT });
try {
  await h.putFile("agents/main/SOUL.md", "# Soul\nBrief.");
  for (let i = 0; i < HISTORY / 2; i++) await turn(h, `h${i}`);
  for (let i = 0; i < WARMUP; i++) await turn(h, `w${i}`);
  const { ws, send, targets } = await connect();
  console.log(`inspector targets: ${targets.map((t) => t.title).join(", ")}`);
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 50 });
  await send("Profiler.start");
  const t0 = performance.now();
  for (let i = 0; i < TURNS; i++) await turn(h, i, TOOLS);
  const wall = performance.now() - t0;
  const { result } = await send("Profiler.stop");
  ws.close();
  const profile = result.profile;
  fs.mkdirSync(path.join(ROOT, "bench/out"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, "bench/out/turns.cpuprofile"), JSON.stringify(profile));
  // Self time per function (samples × their time deltas).
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const n = byId.get(id);
    const name = n.callFrame.functionName || "(anonymous)";
    if (name === "(idle)" || name === "(program)" || name === "(garbage collector)") {
      if (name !== "(idle)") self.set(name, (self.get(name) ?? 0) + dt);
      if (name !== "(idle)") total += dt;
      return;
    }
    const key = `${name} ${n.callFrame.url ? path.basename(n.callFrame.url) : ""}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40);
  console.log(`\n${TURNS} turns in ${wall.toFixed(0)} ms wall; sampled CPU ${(total / 1000).toFixed(1)} ms = ${(total / 1000 / TURNS).toFixed(2)} ms/turn\n`);
  for (const [k, us] of rows) console.log(`${(us / 1000).toFixed(1).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k.slice(0, 140)}`);
} finally {
  await h.close();
}
