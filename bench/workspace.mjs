// Bench rows for the workspace: prompt assembly time at the 60,000-character
// budget (native), R2 operations per turn in steady state (in workerd,
// starter workspace + skills + daily notes, main session), and R2 operations
// per turn for turns spaced past the listing TTLs. workerd's clock cannot be
// advanced from a test, so that last row runs the same loader natively
// (bench/workspace/prompt_bench.rs) on the same files with the clock moved.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

async function steadyR2Ops() {
  const h = await startHearth({ bindings: { ADMIN_TOKEN: "bench" } });
  try {
    const dir = path.join(ROOT, "r2-layout/starter");
    for (const f of fs.readdirSync(dir)) await h.putFile(`agents/main/${f}`, fs.readFileSync(path.join(dir, f), "utf8"));
    for (const s of fs.readdirSync(path.join(ROOT, "skills"))) {
      await h.putFile(`skills/${s}/SKILL.md`, fs.readFileSync(path.join(ROOT, "skills", s, "SKILL.md"), "utf8"));
    }
    await h.putFile(`agents/main/memory/${new Date().toISOString().slice(0, 10)}.md`, "- a note");
    const ops = [];
    for (let i = 0; i < 5; i++) {
      const before = h.telegram.sent().length;
      await h.sendUpdate(tgUpdate({ from: OWNER, text: `turn ${i}` }));
      await h.until(() => h.telegram.sent().length > before);
      await h.settle("agent:main:main");
      ops.push((await h.sessionStatus("agent:main:main")).workspaceR2Ops);
    }
    return ops;
  } finally {
    await h.close();
  }
}

export async function bench() {
  const out = execFileSync("cargo", ["run", "--quiet", "--release", "-p", "durable", "--example", "prompt_bench"], { cwd: ROOT, encoding: "utf8" });
  const j = JSON.parse(out.split("\n").find((l) => l.startsWith("BENCH_JSON ")).slice(11));
  const ops = await steadyR2Ops();
  const [first, steady, past1, past2, pastShared] = j.r2_ops_spaced;
  return [
    { name: "prompt assembly, 60,000-character workspace (native)", value: `${j.prompt_assembly_us} µs` },
    { name: "R2 operations per turn (first turn, then steady state)", value: ops.join(", "), target: "≤ 1 steady" },
    {
      name: `R2 operations per turn spaced past the TTLs (native loader, clock advanced: first, +30 s, +${j.agent_folder_ttl_s + 1} s twice, +${j.shared_layer_ttl_s} s; listings made concurrently: one round trip)`,
      value: [first, steady, past1, past2, pastShared].join(", "),
      target: "≤ 3 past the agent-folder TTL, ≤ 5 past the shared one",
    },
  ];
}
