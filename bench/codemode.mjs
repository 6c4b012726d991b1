// Bench rows for run_code (code mode), in workerd with the LLM stand-in:
// - its overhead: the gap between the model's call and its next request for
//   a script that makes one tool call, less the same gap for that tool
//   called directly (what is left: building and starting the isolate, the
//   harness, the call's round trip through the bridge, the report);
// - the model calls a task of ten file reads takes, tool by tool and with
//   one script;
// - the escapes of the red-team list (tests/fixtures/codemode-redteam.mjs) that succeed.
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { ESCAPES, redTeam, toolResults } from "../tests/support/codemode.mjs";
import { percentile } from "../tests/support/stats.mjs";

const mark = (ok) => (ok ? " ✓" : " ✗");

/** One owner turn with `steps` scripted; returns its LLM requests. */
async function turn(h, steps, text = "go") {
  const first = h.llm.requests.length;
  const sent = h.telegram.sent().length;
  h.llm.push(...steps);
  await h.sendUpdate(tgUpdate({ from: OWNER, text }));
  await h.telegram.untilSent(sent + 1, { timeoutMs: 30000 });
  return h.llm.requests.slice(first);
}

/** The gap between the end of the model's tool call and the start of its next request. */
const gap = (reqs) => reqs[1].start - reqs[0].end;

export async function bench() {
  const rows = [];
  const h = await startHearth({ loader: true, bindings: { MAX_TOOL_ROUNDS: "12" } });
  try {
    await h.putFile("agents/main/SOUL.md", "Kind and brief.");
    for (let i = 1; i <= 10; i++) await h.putFile(`agents/main/notes/n${i}.md`, `note ${i}`);
    // Warm-up: the session, the workspace cache, the first isolate.
    await turn(h, [{ toolCall: { name: "run_code", input: { code: "return 1" } } }, { text: "ok" }]);
    // The tool: load_skill of a skill there is none of, which answers
    // without I/O, so both gaps hold the same tool work and no R2 time.
    const tool = { name: "load_skill", input: { name: "none" } };
    const script = `return await hearth.load_skill("none").catch((e) => e.message)`;
    const runs = 30;
    const direct = [];
    const scripted = [];
    const ran = [];
    for (let i = 0; i < runs; i++) {
      direct.push(gap(await turn(h, [{ toolCall: tool }, { text: "ok" }])));
      const reqs = await turn(h, [{ toolCall: { name: "run_code", input: { code: script } } }, { text: "ok" }]);
      scripted.push(gap(reqs));
      ran.push(Number(toolResults(reqs[1]).at(-1).text.match(/Ran in (\d+) ms/)[1]));
    }
    const sorted = (xs) => [...xs].sort((a, b) => a - b);
    const overhead = percentile(sorted(scripted), 50) - percentile(sorted(direct), 50);
    rows.push({ name: "run_code overhead in a turn (isolate start + one tool call round trip), p50", value: `${overhead.toFixed(1)} ms`, target: `≤ 15 ms${mark(overhead <= 15)}` });
    rows.push({ name: "run_code of one tool call, as the Session times it (isolate start to its report), p50 / p90", value: `${percentile(sorted(ran), 50)} / ${percentile(sorted(ran), 90)} ms` });
    rows.push({ name: "the same tool called directly, model call to next request, p50", value: `${percentile(sorted(direct), 50).toFixed(1)} ms` });

    // Ten reads: tool by tool, then one script.
    const reads = Array.from({ length: 10 }, (_, i) => ({ toolCall: { name: "read_file", input: { path: `notes/n${i + 1}.md` } } }));
    const byTool = (await turn(h, [...reads, { text: "read them all" }])).length;
    const tenReads = `return Promise.all(Array.from({ length: 10 }, (_, i) => hearth.read_file("notes/n" + (i + 1) + ".md")))`;
    const byScript = (await turn(h, [{ toolCall: { name: "run_code", input: { code: tenReads } } }, { text: "read them all" }])).length;
    rows.push({ name: "a task of 10 file reads: model calls with run_code vs tool by tool", value: `${byScript} vs ${byTool}`, target: `2 vs 11${mark(byScript === 2 && byTool === 11)}` });
  } finally {
    await h.close();
  }

  const team = await redTeam(startHearth);
  try {
    const escaped = [];
    for (const e of ESCAPES) {
      const { held } = await team.attempt(e);
      if (!held) escaped.push(e.name);
    }
    rows.push({
      name: `red-team escapes that succeed (of ${ESCAPES.length} tried)`,
      value: escaped.length ? `${escaped.length}: ${escaped.join("; ")}` : "0",
      target: `0${mark(escaped.length === 0)}`,
    });
  } finally {
    await team.close();
  }
  return rows;
}
