#!/usr/bin/env node
// Uploads a local workspace folder to an agent's prefix in R2, without
// overwriting files that are already there (unless --force).
//
//   npm run seed -- --agent main --dir r2-layout/starter            (local dev bucket)
//   npm run seed -- --agent main --dir my-workspace --remote        (deployed bucket)
//   npm run seed -- --prefix skills/ --dir skills                   (global skills)
//
// Local runs write to wrangler dev's persisted state (.wrangler/state), so
// `npm run dev` sees the files; --remote goes through `wrangler r2 object`.
//
// A file of an agent's workspace that --force replaces (or that seeding
// creates) is a change in the workspace history, like every other write:
// the replaced version is kept under history/{agent}/ (who: seed), with the
// layout of r2-layout/README.md (the Worker's durable::workspace::history
// reads it: GET /api/agents/{id}/history/{path}, restore, /undo).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BUCKET = "hearth";

function parseArgs(argv) {
  const args = { agent: null, dir: null, prefix: null, force: false, remote: false, persist: path.join(ROOT, ".wrangler/state"), quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--agent") args.agent = next();
    else if (a === "--dir") args.dir = next();
    else if (a === "--prefix") args.prefix = next();
    else if (a === "--persist") args.persist = path.resolve(next());
    else if (a === "--force") args.force = true;
    else if (a === "--remote") args.remote = true;
    else if (a === "--quiet") args.quiet = true;
    else if (a === "--help" || a === "-h") args.help = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

function walk(dir, base = dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(full, base));
    else out.push(path.relative(base, full).split(path.sep).join("/"));
  }
  return out.sort();
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const LOG_EPOCH = 9_999_999_999_999;
/** Keep in step with r2_layout::keys::HISTORY_PATH_MAX_BYTES. */
const HISTORY_PATH_MAX_BYTES = 700;

/**
 * The history records of one change of `agents/{agent}/{rel}` from `before`
 * to `after` (bytes, or null: absent), as [key, body] pairs to put: the two
 * blobs (content-addressed) and the change in the file's folder and in the
 * agent-wide log. Null when nothing changes.
 */
export function historyRecords(agent, rel, before, after, at, why) {
  const same = before && after ? Buffer.compare(Buffer.from(before), Buffer.from(after)) === 0 : before === after;
  if (same) return null;
  const previous = before ? sha256(before) : null;
  const current = after ? sha256(after) : null;
  // The rev's nonce: 8 hex of a hash of the change.
  const nonce = sha256(`${rel}\n${at}\n${current}\n${previous}\n${why}`).slice(0, 8);
  const rev = `${String(at).padStart(13, "0")}-${nonce}`;
  const change = { path: rel, rev, at, actor: "seed", why, sha256: current, size: after ? after.length : null, previous, previousSize: before ? before.length : null };
  const folder = Buffer.byteLength(rel) <= HISTORY_PATH_MAX_BYTES ? `${rel}/` : `~${sha256(rel)}/`;
  // Plain Uint8Arrays: Miniflare's bucket proxy takes no Buffer.
  const body = new TextEncoder().encode(JSON.stringify(change));
  const puts = [];
  if (before) puts.push([`history/${agent}/blobs/${previous}`, new Uint8Array(before)]);
  if (after) puts.push([`history/${agent}/blobs/${current}`, new Uint8Array(after)]);
  puts.push([`history/${agent}/files/${folder}@${rev}~${current ?? "-"}~${previous ?? "-"}`, body]);
  puts.push([`history/${agent}/log/${String(LOG_EPOCH - at).padStart(13, "0")}-${nonce}`, body]);
  return puts;
}

/**
 * Seeds into an R2 bucket object (Miniflare's, or the Workers binding
 * shape: head, get, put). Returns { uploaded, kept, unchanged }.
 */
export async function seedBucket(bucket, { agent, dir, prefix, force = false, now = Date.now() }) {
  const files = walk(path.resolve(dir));
  const done = { uploaded: [], kept: [], unchanged: [] };
  for (const rel of files) {
    const key = prefix + rel;
    const body = new Uint8Array(fs.readFileSync(path.join(dir, rel)));
    const existing = await bucket.get(key);
    if (existing && !force) {
      done.kept.push(key);
      continue;
    }
    const before = existing ? new Uint8Array(await existing.arrayBuffer()) : null;
    const records = agent ? historyRecords(agent, rel, before, body, now, force && before ? "npm run seed --force" : "npm run seed") : [];
    if (records === null) {
      done.unchanged.push(key);
      continue;
    }
    // The replaced version is kept before it is replaced; blobs already there are not written again.
    for (const [k, v] of records.filter(([k]) => k.includes("/blobs/"))) {
      if (!(await bucket.head(k))) await bucket.put(k, v);
    }
    await bucket.put(key, body);
    for (const [k, v] of records.filter(([k]) => !k.includes("/blobs/"))) await bucket.put(k, v);
    done.uploaded.push(key);
  }
  return done;
}

export async function seed({ agent, dir, prefix, force = false, remote = false, persist, quiet = false }) {
  if (!dir) throw new Error("--dir is required");
  if (!prefix) {
    if (!agent || !/^[a-z0-9_-]{1,64}$/.test(agent)) throw new Error("--agent must be 1-64 characters of a-z 0-9 - _");
    prefix = `agents/${agent}/`;
  }
  if (!fs.existsSync(dir)) throw new Error(`no folder ${dir}`);
  const log = (...m) => quiet || console.log(...m);
  let done;
  if (remote) {
    done = await seedBucket(wranglerBucket(), { agent: prefix === `agents/${agent}/` ? agent : null, dir, prefix, force });
  } else {
    const { localBuckets } = await import("../tests/support/miniflare.mjs");
    const mf = await localBuckets(persist);
    try {
      const bucket = await mf.getR2Bucket("BUCKET");
      done = await seedBucket(bucket, { agent: prefix === `agents/${agent}/` ? agent : null, dir, prefix, force });
    } finally {
      await mf.dispose();
    }
  }
  log(`[seed] ${remote ? "remote" : "local"} bucket: ${done.uploaded.length} uploaded, ${done.kept.length} kept (already there${force ? "" : "; --force overwrites"})${done.unchanged.length ? `, ${done.unchanged.length} unchanged` : ""}`);
  for (const k of done.uploaded) log(`  + ${k}`);
  return done;
}

/** The deployed bucket through `wrangler r2 object` (get, head, put), for --remote. */
function wranglerBucket() {
  const wrangler = path.join(ROOT, "node_modules/.bin/wrangler");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-seed-"));
  const get = (key) => {
    const file = path.join(tmp, "got");
    try {
      execFileSync(wrangler, ["r2", "object", "get", `${BUCKET}/${key}`, "--remote", "--file", file], { stdio: ["ignore", "ignore", "ignore"] });
    } catch {
      return null;
    }
    const bytes = fs.readFileSync(file);
    return { arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) };
  };
  return {
    get: async (key) => get(key),
    head: async (key) => get(key),
    put: async (key, body) => {
      const file = path.join(tmp, "put");
      fs.writeFileSync(file, body);
      execFileSync(wrangler, ["r2", "object", "put", `${BUCKET}/${key}`, "--file", file, "--remote"], { stdio: "inherit" });
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const args = parseArgs(process.argv.slice(2));
    if (args.help) {
      console.log("usage: npm run seed -- (--agent ID | --prefix P) --dir FOLDER [--force] [--remote] [--persist DIR]");
      process.exit(0);
    }
    await seed(args);
  } catch (e) {
    console.error(`[seed] ${e.stack}`);
    process.exit(1);
  }
}
