// The benchmarks live in one tree, bench/, and `npm run bench` runs one list
// of pieces (bench/run.mjs PIECES): every piece file is in the list, every
// listed file exists and has what the runner calls, a piece name that does
// not exist is refused naming the ones that do; the Rust programs the pieces
// run resolve from bench/; `npm run profile` exists as its script says; the
// perf scripts live in bench/perf/. The harness: Miniflare is built in one
// file (tests/support/miniflare.mjs, from wrangler.toml), bench/ and scripts/
// reach into tests/ only through tests/support/, one stand-in per service.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BENCH = path.join(ROOT, "bench");

describe("bench/", () => {
  test("PIECES names every piece file once, each with what the runner calls", async () => {
    const { PIECES } = await import(pathToFileURL(path.join(BENCH, "run.mjs")));
    const files = fs.readdirSync(BENCH).filter((f) => f.endsWith(".mjs") && f !== "run.mjs").sort();
    const listed = PIECES.map((p) => p.rows ?? p.report).sort();
    assert.deepEqual(listed, files, "a piece file missing from PIECES is never run");
    assert.equal(new Set(PIECES.map((p) => p.name)).size, PIECES.length, "names are unique");
    for (const p of PIECES.filter((p) => p.rows)) {
      const mod = await import(pathToFileURL(path.join(BENCH, p.rows)));
      assert.equal(typeof mod.bench, "function", `${p.rows} exports bench()`);
    }
    const readme = fs.readFileSync(path.join(BENCH, "README.md"), "utf8");
    for (const p of PIECES) assert.ok(readme.includes(`| \`${p.name}\` |`), `bench/README.md describes ${p.name}`);
  });

  test("npm run bench -- nope is refused, naming the pieces there are", () => {
    const r = spawnSync(process.execPath, [path.join(BENCH, "run.mjs"), "nope"], { cwd: ROOT, encoding: "utf8" });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no bench piece nope; pieces: turns, versus, api, .*memory/);
  });

  test("nothing is left in the old places; the Rust programs resolve from bench/", () => {
    for (const old of ["tests/bench", "scripts/bench.sh", "scripts/bench.mjs", "durable/examples", "durable/memory/examples", "durable/memory/bench", "durable/memory/wasm-bench", "SIZE_REPORT.md"]) {
      assert.ok(!fs.existsSync(path.join(ROOT, old)), `${old} moved`);
    }
    assert.ok(fs.existsSync(path.join(ROOT, "docs/SIZE_REPORT.md")));
    const meta = JSON.parse(execFileSync("cargo", ["metadata", "--no-deps", "--format-version", "1", "--offline"], { cwd: ROOT, encoding: "utf8" }));
    const examples = Object.fromEntries(meta.packages.flatMap((p) => p.targets.filter((t) => t.kind.includes("example")).map((t) => [t.name, path.relative(ROOT, t.src_path)])));
    // The bench programs, as cargo finds them (gen_zones, a generator of durable/schedule, is no bench).
    assert.equal(examples.cranfield, "bench/memory/cranfield.rs");
    assert.equal(examples.memory_bench, "bench/memory/memory_bench.rs");
    assert.equal(examples.prompt_bench, "bench/workspace/prompt_bench.rs");
  });

  test("npm run profile is a script, as bench/perf/profile.mjs says; the perf scripts are in bench/perf/", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    assert.equal(pkg.scripts.profile, "node bench/perf/profile.mjs");
    assert.equal(pkg.scripts.bench, "bash bench/run.sh");
    assert.match(fs.readFileSync(path.join(ROOT, "bench/perf/profile.mjs"), "utf8"), /^\/\/ `npm run profile`/m);
    for (const f of ["cold-start", "cold-io", "cold-perf", "cold-profile", "profile"]) {
      assert.ok(fs.existsSync(path.join(BENCH, "perf", `${f}.mjs`)), `bench/perf/${f}.mjs`);
      assert.ok(!fs.existsSync(path.join(ROOT, "scripts", `${f}.mjs`)), `scripts/${f}.mjs moved`);
    }
    // The usage line of each names where it is.
    for (const f of fs.readdirSync(path.join(BENCH, "perf")).filter((f) => f.startsWith("cold-"))) {
      const text = fs.readFileSync(path.join(BENCH, "perf", f), "utf8");
      assert.ok(!/scripts\/cold-/.test(text), `${f} names no old path`);
      assert.match(text, new RegExp(`node bench/perf/${f.replace(".", "\\.")}`), `${f} shows how to run it`);
    }
  });
});

/** The .mjs files under `dir` (relative to the root), node_modules and outputs left out. */
function scripts(dir) {
  const out = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory() && !["node_modules", "out", "fixtures"].includes(e.name)) out.push(...scripts(rel));
    else if (e.isFile() && e.name.endsWith(".mjs")) out.push(rel);
  }
  return out;
}

/** The modules `file` imports (static and dynamic), as written. */
function importsOf(file) {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8");
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1] ?? m[2]);
}

describe("tests/support/", () => {
  const ALL = [...scripts("tests"), ...scripts("bench"), ...scripts("scripts")];

  test("Miniflare is built in one file: tests/support/miniflare.mjs", () => {
    const builders = ALL.filter((f) => /new Miniflare\(/.test(fs.readFileSync(path.join(ROOT, f), "utf8")));
    assert.deepEqual(builders, ["tests/support/miniflare.mjs"]);
    const importers = ALL.filter((f) => importsOf(f).includes("miniflare"));
    assert.deepEqual(importers, ["tests/support/miniflare.mjs"]);
  });

  test("bench/ and scripts/ import from tests/ only tests/support/", () => {
    const bad = [];
    for (const f of [...scripts("bench"), ...scripts("scripts")]) {
      for (const spec of importsOf(f).filter((s) => s.startsWith("."))) {
        const target = path.relative(ROOT, path.resolve(ROOT, path.dirname(f), spec));
        if (target.startsWith("tests/") && !target.startsWith("tests/support/")) bad.push(`${f} → ${target}`);
        if (target.startsWith("scripts/") && f.startsWith("bench/")) bad.push(`${f} → ${target}`);
      }
    }
    assert.deepEqual(bad, []);
    assert.ok(!fs.existsSync(path.join(ROOT, "tests/helpers")), "tests/helpers/ moved into tests/support/");
  });

  test("wrangler.toml is read as wrangler reads it, and Miniflare gets what it declares", async () => {
    const { readToml, parseToml } = await import(pathToFileURL(path.join(ROOT, "tests/support/wrangler-toml.mjs")));
    const { unstable_readConfig } = await import("wrangler");
    const ours = readToml(path.join(ROOT, "wrangler.toml"));
    const theirs = unstable_readConfig({ config: path.join(ROOT, "wrangler.toml") });
    assert.equal(path.join(ROOT, ours.main), theirs.main);
    for (const k of ["compatibility_date", "r2_buckets", "durable_objects", "migrations", "assets", "vars", "triggers"]) {
      assert.deepEqual(ours[k], theirs[k], k);
    }
    const { hearthOptions } = await import(pathToFileURL(path.join(ROOT, "tests/support/miniflare.mjs")));
    const o = hearthOptions();
    assert.equal(o.compatibilityDate, theirs.compatibility_date);
    assert.deepEqual(o.r2Buckets, { BUCKET: "hearth" });
    assert.deepEqual(o.durableObjects, {
      SESSION: { className: "Session", useSQLite: true },
      AGENT: { className: "Agent", useSQLite: true },
      GATEWAY: { className: "Gateway", useSQLite: true },
    });
    assert.deepEqual(o.modules.map((m) => path.relative(ROOT, m.path)), ["build/index.js", "build/index_bg.wasm"]);
    // What the reader refuses, it names with the line.
    assert.throws(() => parseToml('a = "x"\nb = [1, 2', "t.toml"), /t\.toml:2:/);
    assert.throws(() => parseToml("a = 1\na = 2", "t.toml"), /a is set twice/);
  });

  test("one stand-in per service, each starting its server", async () => {
    const SERVICES = {
      "telegram.mjs": "startTelegram",
      "llm.mjs": "startLlm",
      "discord.mjs": "startDiscord",
      "discord-gateway.mjs": "startGateway",
      "slack.mjs": "startSlack",
      "whatsapp.mjs": "startWhatsApp",
      "mcp.mjs": "startMcpStandin",
    };
    for (const [file, start] of Object.entries(SERVICES)) {
      const mod = await import(pathToFileURL(path.join(ROOT, "tests/support", file)));
      assert.equal(typeof mod[start], "function", `tests/support/${file} exports ${start}`);
      const others = Object.entries(SERVICES).filter(([f]) => f !== file).map(([, s]) => s);
      for (const s of others) assert.ok(!(s in mod), `tests/support/${file} holds no other service's stand-in (${s})`);
    }
  });
});
