// The benchmarks live in one tree, bench/, and `npm run bench` runs one list
// of pieces (bench/run.mjs PIECES): every piece file is in the list, every
// listed file exists and has what the runner calls, a piece name that does
// not exist is refused naming the ones that do; the Rust programs the pieces
// run resolve from bench/; `npm run profile` exists as its script says.
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

  test("npm run profile is a script, as scripts/profile.mjs says", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    assert.equal(pkg.scripts.profile, "node scripts/profile.mjs");
    assert.equal(pkg.scripts.bench, "bash bench/run.sh");
    assert.match(fs.readFileSync(path.join(ROOT, "scripts/profile.mjs"), "utf8"), /^\/\/ `npm run profile`/m);
  });
});
