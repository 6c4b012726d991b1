// GSV (deathbyknowledge/gsv, the TypeScript agent on the same platform) beside
// Hearth in the bench: built from a checkout or bare git dir the bench is
// given, never committed here, and run in its own workerd with the same
// stand-ins and the same workspace as Hearth.
//
//   GSV_REPO=/path/to/gsv[.git]   the repository (a bare git dir or a checkout)
//   GSV_COMMIT=dcd2be14           the commit measured (default dcd2be14)
//
//   GSV_BUILD_DIR=...             where it is built (default ~/.cache/hearth-bench/gsv-<commit>)
//
// The first run extracts that commit there (outside the repository), runs
// `npm ci` in its gateway/ and `wrangler deploy --dry-run --outdir` (its own
// wrangler, as its users deploy it) for the bundle; later runs reuse it.
// Without GSV_REPO the GSV figures are skipped, saying so.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { workerMiniflare } from "../../tests/support/miniflare.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const GSV_COMMIT = process.env.GSV_COMMIT || "dcd2be14";

/** Why GSV cannot run here (a sentence for the bench's table), or null. */
export function gsvMissing() {
  const repo = process.env.GSV_REPO;
  if (!repo) return "GSV not run: set GSV_REPO to a GSV git repository (bench/README.md)";
  if (!fs.existsSync(repo)) return `GSV not run: GSV_REPO=${repo} does not exist`;
  return null;
}

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", maxBuffer: 64 << 20 });

/**
 * The built GSV gateway: `{script, dir, upload}`; builds it on first use.
 * `upload`: wrangler's "Total Upload" line for it.
 */
export function gsvBundle() {
  const repo = process.env.GSV_REPO;
  const dir = process.env.GSV_BUILD_DIR || path.join(os.homedir(), ".cache", "hearth-bench", `gsv-${GSV_COMMIT}`);
  const out = path.join(dir, "out");
  const script = path.join(out, "index.js");
  const uploadFile = path.join(out, "upload.txt");
  if (!fs.existsSync(script)) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const bare = fs.existsSync(path.join(repo, "HEAD")) && !fs.existsSync(path.join(repo, ".git"));
    const gitDir = bare ? repo : path.join(repo, ".git");
    const tar = execFileSync("git", ["--git-dir", gitDir, "archive", GSV_COMMIT], { maxBuffer: 256 << 20 });
    execFileSync("tar", ["-x", "-C", dir], { input: tar });
    const gateway = path.join(dir, "gateway");
    console.error(`[gsv] npm ci in ${gateway} (once)`);
    run("npm", ["ci", "--no-audit", "--no-fund"], gateway);
    // Its wrangler config serves a built web UI; the dry run only needs the folder.
    fs.mkdirSync(path.join(gateway, "ui", "dist"), { recursive: true });
    const log = run(path.join(gateway, "node_modules", ".bin", "wrangler"), ["deploy", "--dry-run", "--outdir", out], gateway);
    fs.writeFileSync(uploadFile, (log.match(/Total Upload:[^\n]*/) || ["?"])[0]);
  }
  return { script, dir, upload: fs.existsSync(uploadFile) ? fs.readFileSync(uploadFile, "utf8").trim() : "?" };
}

// Every request GSV makes to Anthropic goes to the LLM stand-in instead (its
// model catalogue fixes api.anthropic.com); everything else goes out as is.
const ROUTE = `export default {
  fetch(request, env) {
    const url = new URL(request.url);
    if (url.hostname === "api.anthropic.com") return fetch(env.LLM_BASE + url.pathname + url.search, request);
    return fetch(request);
  },
};`;

/**
 * GSV's settings for the bench: the stand-in model and its key; the rest is
 * GSV's defaults. Those put every DM in the main session (`dmScope: "main"`),
 * so the bench's "new conversation" for GSV is a new group chat (its own
 * Session object, not the main session), where Hearth's is a new friend's DM.
 */
const CONFIG = {
  apiKeys: { anthropic: "test-llm-key" },
  model: { provider: "anthropic", id: "claude-sonnet-4-20250514" },
};

/**
 * A booted GSV in a Miniflare of its own: `{mf, send(from, text, chat?), close()}`.
 * `persist`: a folder for its R2 and objects' storage; `seed`: write its
 * settings and the workspace `files` (a storage that has them already: no).
 */
export async function startGsv({ telegram, llm, persist, seed = true, files = { "agents/main/SOUL.md": "# Soul\nBrief." } }) {
  const { script } = gsvBundle();
  const mf = await workerMiniflare({
    workers: [
      {
        name: "bench-channel",
        modules: true,
        scriptPath: path.join(ROOT, "bench/gsv/channel.mjs"),
        compatibilityDate: "2026-01-28",
        bindings: { TELEGRAM_API_BASE: telegram.base, TELEGRAM_BOT_TOKEN: telegram.token },
        serviceBindings: { GATEWAY: { name: "gsv", entrypoint: "GatewayEntrypoint" }, GSV: "gsv" },
        durableObjects: { GSV_GATEWAY: { className: "Gateway", scriptName: "gsv", useSQLite: true } },
      },
      {
        name: "gsv",
        modules: true,
        scriptPath: script,
        // Its build lives outside the repository: module names are taken from there.
        modulesRoot: path.dirname(script),
        compatibilityDate: "2026-01-28",
        compatibilityFlags: ["nodejs_compat"],
        r2Buckets: ["STORAGE"],
        durableObjects: { GATEWAY: { className: "Gateway", useSQLite: true }, SESSION: { className: "Session", useSQLite: true } },
        serviceBindings: { CHANNEL_TEST: { name: "bench-channel", entrypoint: "BenchChannel" } },
        outboundService: "llm-route",
      },
      { name: "llm-route", modules: true, script: ROUTE, compatibilityDate: "2026-01-28", bindings: { LLM_BASE: llm.base } },
    ],
    cf: false,
    ...(persist ? { r2Persist: path.join(persist, "r2"), durableObjectsPersist: path.join(persist, "do") } : {}),
    // GSV logs every step (console.log): drained, not printed into the bench's report.
    handleRuntimeStdio(stdout, stderr) {
      stdout.resume();
      // Errors still show (a runtime that fails to start says why there).
      stderr.on("data", (d) => {
        if (process.env.GSV_DEBUG || /error/i.test(String(d))) process.stderr.write(d);
      });
    },
  });
  if (seed) {
    const bucket = await mf.getR2Bucket("STORAGE", "gsv");
    for (const [key, text] of Object.entries(files)) await bucket.put(key, text);
    const res = await mf.dispatchFetch("http://bench-channel/config", { method: "POST", body: JSON.stringify(CONFIG) });
    if (res.status !== 200) throw new Error(`GSV config: ${res.status} ${await res.text()}`);
  }
  let id = Date.now();
  return {
    mf,
    /** A DM from `from` (the main session), or with `chat` their message in that group: resolves when GSV accepted it. */
    async send(from, text, chat) {
      const r = await mf.dispatchFetch("http://bench-channel/inbound", { method: "POST", body: JSON.stringify({ from, chat, text, id: id++ }) });
      const body = await r.text();
      if (r.status !== 200) throw new Error(`GSV inbound ${r.status}: ${body}`);
    },
    close: () => mf.dispose(),
  };
}
