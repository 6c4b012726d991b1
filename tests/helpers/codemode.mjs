// Helpers of the run_code tests and bench: the model (LLM stand-in) runs a
// script in a chat turn, and what its tool result said.
import { OWNER, tgUpdate } from "./hearth.mjs";

/** Tool results in an LLM request (Anthropic's wire format). */
export function toolResults(req) {
  const out = [];
  for (const m of req.body.messages || []) {
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === "tool_result") {
        const text = typeof b.content === "string" ? b.content : b.content.map((c) => c.text).join("");
        out.push({ text, isError: !!b.is_error });
      }
    }
  }
  return out;
}

/** The model runs `code` in a chat turn from `from`; returns the tool's result and the turn's LLM requests. */
export async function runCode(h, code, { from = OWNER, reply = "done" } = {}) {
  const sent = h.telegram.sent().length;
  const first = h.llm.requests.length;
  h.llm.push({ toolCall: { name: "run_code", input: { code } } }, { text: reply });
  await h.sendUpdate(tgUpdate({ from, text: "run this" }));
  await h.telegram.untilSent(sent + 1, { timeoutMs: 20000 });
  const reqs = h.llm.requests.slice(first);
  return { result: toolResults(reqs.at(-1)).at(-1), requests: reqs };
}
