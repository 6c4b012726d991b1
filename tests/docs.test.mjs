// The documentation holds together: README.md is a front door (at most 400
// lines: what Hearth is, the quick start, the configuration index, the
// layout, the commands), every relative link in README.md and docs/**/*.md
// reaches a file that exists and, with a #fragment, a heading of it (as
// GitHub makes anchors), and the configuration index names every setting
// docs/configuration.md describes.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function markdownFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...markdownFiles(rel));
    else if (e.name.endsWith(".md")) out.push(rel);
  }
  return out;
}

/** The text outside fenced code blocks and inline code (links there are examples, not links). */
function prose(text) {
  return text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "``");
}

/** GitHub's anchors of a markdown file's headings (a repeated one gets -1, -2, …). */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const line of text.replace(/^```[\s\S]*?^```/gm, "").split("\n")) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The relative links of a markdown text: `[label](target)` and `![alt](target)`, no scheme, no bare anchors of other files. */
function links(text) {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

const PAGES = ["README.md", ...markdownFiles("docs")];

describe("docs", () => {
  test("README.md is at most 400 lines and opens with the quick start's commands", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const lines = readme.split("\n").length;
    assert.ok(lines <= 400, `README.md has ${lines} lines`);
    for (const section of ["## Quick start", "## Configuration", "## Layout", "## Commands"]) {
      assert.ok(readme.includes(`\n${section}\n`), `README.md has ${section}`);
    }
    const quick = readme.slice(readme.indexOf("## Quick start"));
    assert.match(quick.slice(0, 600), /npm run dev[\s\S]*npm test/, "the quick start shows npm run dev and npm test first");
  });

  test("every relative link in README.md and docs/ resolves, its #fragment to a heading", () => {
    const broken = [];
    const cache = new Map();
    const headings = (file) => {
      if (!cache.has(file)) cache.set(file, anchors(fs.readFileSync(file, "utf8")));
      return cache.get(file);
    };
    for (const page of PAGES) {
      const file = path.join(ROOT, page);
      for (const target of links(fs.readFileSync(file, "utf8"))) {
        const [rel, fragment] = target.split("#");
        const dest = rel ? path.resolve(path.dirname(file), decodeURIComponent(rel)) : file;
        if (!fs.existsSync(dest)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (fragment && dest.endsWith(".md") && !headings(dest).has(fragment.toLowerCase())) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  test("the README's configuration index names every setting of docs/configuration.md, each with its page", () => {
    const settings = (text) =>
      text
        .split("\n")
        .filter((l) => /^\| (`|\*)/.test(l))
        .map((l) => l.split("|")[1].trim());
    const reference = settings(fs.readFileSync(path.join(ROOT, "docs/configuration.md"), "utf8"));
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const index = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("## Layout"));
    assert.ok(reference.length > 70, `docs/configuration.md lists ${reference.length} settings`);
    assert.deepEqual(settings(index), reference);
    for (const row of index.split("\n").filter((l) => /^\| (`|\*)/.test(l))) assert.match(row, /\]\(docs\/[a-z-]+\.md\) \|$/, row);
  });

  test("the link checker finds what is broken", () => {
    assert.deepEqual(links("[a](x.md#y) ![b](img.png) [c](https://e.org) `[d](no.md)`"), ["x.md#y", "img.png"]);
    assert.deepEqual([...anchors("# Code mode (`run_code`)\n## A, b\n## A, b\n```\n# not\n```")], ["code-mode-run_code", "a-b", "a-b-1"]);
  });
});
