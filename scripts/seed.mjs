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
import { execFileSync } from "node:child_process";
import fs from "node:fs";
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

export async function seed({ agent, dir, prefix, force = false, remote = false, persist, quiet = false }) {
  if (!dir) throw new Error("--dir is required");
  if (!prefix) {
    if (!agent || !/^[a-z0-9_-]{1,64}$/.test(agent)) throw new Error("--agent must be 1-64 characters of a-z 0-9 - _");
    prefix = `agents/${agent}/`;
  }
  const files = walk(path.resolve(dir));
  const log = (...m) => quiet || console.log(...m);
  const done = { uploaded: [], kept: [] };
  if (remote) {
    const wrangler = path.join(ROOT, "node_modules/.bin/wrangler");
    for (const rel of files) {
      const key = prefix + rel;
      let exists = false;
      if (!force) {
        try {
          execFileSync(wrangler, ["r2", "object", "get", `${BUCKET}/${key}`, "--remote", "--pipe"], { stdio: ["ignore", "ignore", "ignore"] });
          exists = true;
        } catch {}
      }
      if (exists) {
        done.kept.push(key);
        continue;
      }
      execFileSync(wrangler, ["r2", "object", "put", `${BUCKET}/${key}`, "--file", path.join(dir, rel), "--remote"], { stdio: "inherit" });
      done.uploaded.push(key);
    }
  } else {
    const { Miniflare } = await import("miniflare");
    const mf = new Miniflare({
      modules: true,
      script: "export default { fetch() { return new Response('seed') } }",
      r2Buckets: { BUCKET },
      r2Persist: path.join(persist, "v3", "r2"),
      cf: false,
    });
    try {
      const bucket = await mf.getR2Bucket("BUCKET");
      for (const rel of files) {
        const key = prefix + rel;
        if (!force && (await bucket.head(key))) {
          done.kept.push(key);
          continue;
        }
        await bucket.put(key, new Uint8Array(fs.readFileSync(path.join(dir, rel))));
        done.uploaded.push(key);
      }
    } finally {
      await mf.dispose();
    }
  }
  log(`[seed] ${remote ? "remote" : "local"} bucket: ${done.uploaded.length} uploaded, ${done.kept.length} kept (already there${force ? "" : "; --force overwrites"})`);
  for (const k of done.uploaded) log(`  + ${k}`);
  return done;
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
