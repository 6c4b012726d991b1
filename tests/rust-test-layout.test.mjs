// One Rust test convention (docs/ARCHITECTURE.md, "Where Rust tests go"): a
// module's tests are its child module `tests`, inline or at the path Rust
// looks for it (`foo/tests.rs`), never a sibling `foo_tests.rs` nor a
// `#[path = …]`. The ones from before have all moved; any is refused.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CRATES = ["src", "durable", "r2-layout", "bench"];

function rustFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== "target" && e.name !== "node_modules") out.push(...rustFiles(rel));
    else if (e.name.endsWith(".rs")) out.push(rel);
  }
  return out;
}

test("Rust tests are each module's child `tests`: no sibling _tests.rs, no #[path]", () => {
  const offending = [];
  for (const file of CRATES.flatMap(rustFiles)) {
    const text = fs.readFileSync(path.join(ROOT, file), "utf8");
    const sibling = file.endsWith("_tests.rs");
    // A #[path] to a test file (bench programs share code with #[path]: not tests).
    const pathAttr = /^\s*#\[path\s*=\s*"[^"]*tests?\.rs"\]/m.test(text);
    if (sibling || pathAttr) offending.push(`${file}${sibling ? " (a sibling _tests.rs)" : " (#[path])"}`);
  }
  assert.deepEqual(offending, [], "tests of foo.rs go in `mod tests` inline or in foo/tests.rs (docs/ARCHITECTURE.md)");
});
