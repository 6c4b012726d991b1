// The Hearth the cold-start measures boot (bench/turns.mjs, bench/versus.mjs,
// bench/perf/cold-*.mjs): one given build (JS glue + WASM) with R2 and the
// SQLite objects, the owner (and a friend) allowed, the Telegram and LLM
// stand-ins as its peers. One place, so they measure the same Worker set up
// the same way.
import path from "node:path";
import { FRIEND, SECRET, standinSettings, tgUpdate } from "./hearth.mjs";
import { HEARTH_MODULES, hearthMiniflare, ROOT } from "./miniflare.mjs";

/** The JS I/O floor (bench/floor/worker.mjs): a build spec of its own. */
export const FLOOR = "floor";

/** The JS I/O floor's module; it exports the Session and Agent objects only. */
export const FLOOR_MODULES = [{ type: "ESModule", path: path.join(ROOT, "bench/floor/worker.mjs") }];
export const FLOOR_CLASSES = ["Session", "Agent"];

/**
 * The cold-start settings: the stand-ins', `allow` (and the friend) allowed;
 * `defaults`: the settings users get (else the order hold is off, see below).
 */
export function coldSettings({ telegram, llm, allow = [], defaults = false }) {
  return {
    ...standinSettings({ llm, telegram }),
    ALLOW_FROM: [FRIEND, ...allow].map((id) => `telegram:${id}`).join(","),
    // The floor does not order messages: the hold a first message waits for
    // a straggler (+ORDER_HOLD_MS wall, one alarm) is the order rows' figure.
    ...(defaults ? {} : { ORDER_HOLD_MS: "0" }),
  };
}

/**
 * A new Miniflare running `js` + `wasm` (contents), ready; with `floor`, the
 * JS I/O floor worker instead (same bindings). `allow`: more allowed chats.
 * `defaults`: the settings users get (else the order hold is off);
 * `persist`: a folder for R2 and the objects' storage (a later Miniflare on
 * it is a boot with the storage kept).
 */
export async function coldMiniflare({ js, wasm, floor, telegram, llm, inspectorPort, allow = [], defaults = false, persist }) {
  const [glue, binary] = HEARTH_MODULES;
  const { mf } = await hearthMiniflare({
    modules: floor ? FLOOR_MODULES : [{ ...glue, contents: js }, { ...binary, contents: wasm }],
    classes: floor ? FLOOR_CLASSES : undefined,
    bindings: coldSettings({ telegram, llm, allow, defaults }),
    inspectorPort,
    persist,
  });
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
