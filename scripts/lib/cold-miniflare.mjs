// The Miniflare the cold-start scripts (cold-start, cold-perf, cold-profile)
// boot: one given build (JS glue + WASM) with R2 and the SQLite objects, the
// owner (and a friend) allowed, the Telegram and LLM stand-ins as its peers.
// One place, so the three measure the same Worker set up the same way.
import { Miniflare } from "miniflare";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FRIEND, OWNER, SECRET, tgUpdate } from "../../tests/helpers/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The JS I/O floor (bench/floor/worker.mjs): a build spec of its own. */
export const FLOOR = "floor";

/**
 * A new Miniflare running `js` + `wasm` (contents), ready; with `floor`, the
 * JS I/O floor worker instead (same bindings). `allow`: more allowed chats.
 * `defaults`: the settings users get (else the order hold is off, see
 * below); `persist`: a folder for R2 and the objects' storage (a later
 * Miniflare on it is a boot with the storage kept).
 */
export async function coldMiniflare({ js, wasm, floor, telegram, llm, inspectorPort, allow = [], defaults = false, persist }) {
  const mf = new Miniflare({
    modulesRoot: ROOT,
    modules: floor
      ? [{ type: "ESModule", path: path.join(ROOT, "bench/floor/worker.mjs") }]
      : [
          { type: "ESModule", path: path.join(ROOT, "build/index.js"), contents: js },
          { type: "CompiledWasm", path: path.join(ROOT, "build/index_bg.wasm"), contents: wasm },
        ],
    compatibilityDate: "2026-04-01",
    r2Buckets: ["BUCKET"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true }, AGENT: { className: "Agent", useSQLite: true } },
    bindings: {
      AGENTS: "main", LLM_PROVIDER: "anthropic", LLM_BASE_URL: llm.base, LLM_MODEL: "claude-test", LLM_API_KEY: "test-llm-key",
      TELEGRAM_API_BASE: telegram.base, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_WEBHOOK_SECRET: SECRET,
      OWNER_IDS: `telegram:${OWNER}`, ALLOW_FROM: [FRIEND, ...allow].map((id) => `telegram:${id}`).join(","), RESET_DAILY_AT: "off",
      // The floor does not order messages: the hold a first message waits for
      // a straggler (+ORDER_HOLD_MS wall, one alarm) is the order rows' figure.
      ...(defaults ? {} : { ORDER_HOLD_MS: "0" }),
    },
    cf: false,
    ...(inspectorPort ? { inspectorPort } : {}),
    ...(persist ? { r2Persist: path.join(persist, "r2"), durableObjectsPersist: path.join(persist, "do") } : {}),
  });
  await mf.ready;
  return mf;
}

/** Sends `text` from `from` to the agent's Telegram webhook; throws unless it is acknowledged. */
export async function postTelegram(mf, from, text) {
  const res = await mf.dispatchFetch("http://hearth.test/telegram/main", {
    method: "POST",
    headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
    body: JSON.stringify(tgUpdate({ from, text })),
  });
  await res.text();
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
}
