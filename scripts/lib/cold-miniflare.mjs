// The Miniflare the cold-start scripts (cold-start, cold-perf, cold-profile)
// boot: one given build (JS glue + WASM) with R2 and the SQLite objects, the
// owner (and a friend) allowed, the Telegram and LLM stand-ins as its peers.
// One place, so the three measure the same Worker set up the same way.
import { Miniflare } from "miniflare";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FRIEND, OWNER, SECRET } from "../../tests/helpers/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A new Miniflare running `js` + `wasm` (contents), ready. */
export async function coldMiniflare({ js, wasm, telegram, llm, inspectorPort }) {
  const mf = new Miniflare({
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: path.join(ROOT, "build/index.js"), contents: js },
      { type: "CompiledWasm", path: path.join(ROOT, "build/index_bg.wasm"), contents: wasm },
    ],
    compatibilityDate: "2026-04-01",
    r2Buckets: ["BUCKET"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true }, AGENT: { className: "Agent", useSQLite: true } },
    bindings: {
      AGENTS: "main", LLM_PROVIDER: "anthropic", LLM_BASE_URL: llm.base, LLM_MODEL: "claude-test", LLM_API_KEY: "test-llm-key",
      TELEGRAM_API_BASE: telegram.base, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_WEBHOOK_SECRET: SECRET,
      OWNER_IDS: `telegram:${OWNER}`, ALLOW_FROM: `telegram:${FRIEND}`, RESET_DAILY_AT: "off",
    },
    cf: false,
    ...(inspectorPort ? { inspectorPort } : {}),
  });
  await mf.ready;
  return mf;
}
