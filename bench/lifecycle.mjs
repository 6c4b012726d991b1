// Bench row: time and size to archive a 1,000-message session in WASM
// (a /reset in workerd; the extraction LLM call is instant in the stand-in).
import { OWNER, startHearth, tgUpdate } from "../tests/support/hearth.mjs";

export async function bench() {
  const h = await startHearth();
  try {
    for (let i = 0; i < 500; i++) {
      const before = h.telegram.sent().length;
      await h.sendUpdate(tgUpdate({ from: OWNER, text: `message ${i}: ${"some words of a normal chat line ".repeat(3)}` }));
      await h.until(() => h.telegram.sent().length > before, { timeoutMs: 20000 });
    }
    await h.settle("agent:main:main");
    const { sessionId, messages } = await h.sessionStatus("agent:main:main");
    const before = h.telegram.sent().length;
    const t0 = performance.now();
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "/reset" }));
    await h.until(() => h.telegram.sent().length > before, { timeoutMs: 60000 });
    const ms = performance.now() - t0;
    const obj = await (await h.bucket()).head(`agents/main/sessions/${sessionId}.jsonl.gz`);
    return [
      { name: `archive a ${messages.length}-message session (/reset → reply, WASM)`, value: `${ms.toFixed(0)} ms, ${(obj.size / 1024).toFixed(1)} KiB gzip` },
    ];
  } finally {
    await h.close();
  }
}
