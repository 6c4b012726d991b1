// The one place Miniflare is built. Hearth's Worker is set up from
// wrangler.toml, as `wrangler dev` and a deploy set it up: its main module
// and the WASM beside it, its compatibility date, R2 buckets, Durable
// Objects (SQLite-backed as its migrations say) and static assets. The
// settings (vars) are the caller's: tests and the bench name every setting
// they rely on, and wrangler.toml's [vars] repeat the Worker's own defaults.
// Other workers (a bare bucket, a probe script, GSV) are built here too,
// through `workerMiniflare`, so no other file imports Miniflare.
import { Log, LogLevel, Miniflare } from "miniflare";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readToml } from "./wrangler-toml.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** wrangler.toml, parsed. */
export const WRANGLER = readToml(path.join(ROOT, "wrangler.toml"));

// Bindings wrangler.toml carries only as comments (an account enables them
// first: Dynamic Workers, Email Routing); their names as written there.
export const LOADER_BINDING = "LOADER";
export const EMAIL_BINDING = "SEND_EMAIL";

const MAIN = path.join(ROOT, WRANGLER.main);

/** The built Worker's modules: wrangler.toml's `main` and the WASM worker-build writes beside it. */
export const HEARTH_MODULES = [
  { type: "ESModule", path: MAIN },
  { type: "CompiledWasm", path: path.join(path.dirname(MAIN), "index_bg.wasm") },
];

/** The R2 buckets of wrangler.toml: binding → bucket name (the name local state is kept under). */
export const R2_BUCKETS = Object.fromEntries((WRANGLER.r2_buckets ?? []).map((b) => [b.binding, b.bucket_name]));

const SQLITE = new Set((WRANGLER.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []));

/** The Durable Object bindings of wrangler.toml; `classes`: only those (a worker that exports fewer). */
export function durableObjects(classes) {
  const out = {};
  for (const b of WRANGLER.durable_objects?.bindings ?? []) {
    if (classes && !classes.includes(b.class_name)) continue;
    out[b.name] = { className: b.class_name, useSQLite: SQLITE.has(b.class_name) };
  }
  return out;
}

/** The web console's static assets as wrangler.toml's [assets] serves them
 * (built by scripts/build-console.mjs), in front of the Worker. */
export const CONSOLE_ASSETS = {
  directory: path.join(ROOT, WRANGLER.assets.directory),
  assetConfig: { html_handling: WRANGLER.assets.html_handling, not_found_handling: WRANGLER.assets.not_found_handling },
  routerConfig: { has_user_worker: true },
};

/**
 * Miniflare's log, with what its `send_email` binding stored noted in
 * `sent`: each message the Worker sent (Miniflare's own binding checks it as
 * Cloudflare does, and writes it to a file whose path it logs).
 */
class MailLog extends Log {
  constructor(sent) {
    super(LogLevel.INFO);
    this.sent = sent;
  }
  log(message) {
    const file = message.includes("send_email binding called") && message.match(/(\S+\.eml)/);
    if (file) {
      this.sent.push({ file: file[1], raw: fs.readFileSync(file[1], "utf8") });
      return;
    }
    super.log(message);
  }
}

/**
 * The Miniflare options of Hearth's Worker with `bindings` (its settings).
 * `modules`: other modules (the main one first) in place of the build, e.g.
 * the JS I/O floor or a counting wrapper; `classes`: the Durable Object
 * classes they export, when fewer. `assets`: the console in front;
 * `loader`: a Worker Loader binding (code mode); `email`: the `send_email`
 * binding (options of Miniflare's, or true) with the email trigger, its
 * sends pushed to `mails`; `persist`: a folder for R2 and the objects'
 * storage (a later Miniflare on it is a boot with the storage kept).
 */
export function hearthOptions({ bindings = {}, modules = HEARTH_MODULES, classes, persist, inspectorPort, assets = false, loader = false, email, mails = [], extra = {} } = {}) {
  return {
    modulesRoot: ROOT,
    modules,
    compatibilityDate: WRANGLER.compatibility_date,
    r2Buckets: R2_BUCKETS,
    durableObjects: durableObjects(classes),
    bindings,
    cf: false,
    ...(email
      ? { unsafeTriggerHandlers: true, email: { send_email: [{ name: EMAIL_BINDING, ...(email === true ? {} : email) }] }, log: new MailLog(mails) }
      : {}),
    ...(inspectorPort ? { inspectorPort } : {}),
    ...(assets ? { assets: CONSOLE_ASSETS } : {}),
    ...(loader ? { workerLoaders: { [LOADER_BINDING]: {} } } : {}),
    ...(persist ? { r2Persist: path.join(persist, "r2"), durableObjectsPersist: path.join(persist, "do") } : {}),
    ...extra,
  };
}

/** A Miniflare running Hearth (options as `hearthOptions`), ready; `address`: where workerd listens. */
export async function hearthMiniflare(options) {
  const mf = new Miniflare(hearthOptions(options));
  const address = await mf.ready;
  return { mf, address };
}

/** A Miniflare of a worker that is not Hearth (Miniflare's own options), ready. */
export async function workerMiniflare(options) {
  const mf = new Miniflare({ cf: false, ...options });
  await mf.ready;
  return mf;
}

/**
 * A Miniflare holding only wrangler.toml's buckets, on the local state
 * `wrangler dev` keeps under `persist` (`.wrangler/state`), for writing into
 * what a later `npm run dev` reads.
 */
export function localBuckets(persist) {
  return workerMiniflare({
    modules: true,
    script: "export default { fetch() { return new Response('buckets') } }",
    r2Buckets: R2_BUCKETS,
    r2Persist: path.join(persist, "v3", "r2"),
  });
}
