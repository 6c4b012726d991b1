// Builds the web console (console/ → dist-console/console/): the pages are
// static assets wrangler serves before the Worker runs ([assets] in
// wrangler.toml), so they add nothing to the WASM upload. esbuild bundles
// console/src/app.js (code split: the chat page and the markdown renderer
// load first; the other pages are chunks fetched when first opened, and the
// CodeMirror editor is its own chunk, loaded only by the workspace editor)
// and console/app.css, minified.
// Prints the first load's JS+CSS size gzip-compressed (target: ≤ 60 KiB with the markdown renderer).
import { build } from "esbuild";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SRC = path.join(ROOT, "console");
const OUT_ROOT = path.join(ROOT, "dist-console");
const OUT = path.join(OUT_ROOT, "console");

fs.rmSync(OUT_ROOT, { recursive: true, force: true });
fs.mkdirSync(OUT, { recursive: true });
const result = await build({
  entryPoints: { app: path.join(SRC, "src/app.js"), style: path.join(SRC, "app.css") },
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: "esm",
  minify: true,
  target: ["es2022"],
  chunkNames: "chunks/[name]-[hash]",
  metafile: true,
  logLevel: "warning",
});
fs.copyFileSync(path.join(SRC, "index.html"), path.join(OUT, "index.html"));
// Security headers for the pages (wrangler and Miniflare read _headers).
fs.copyFileSync(path.join(SRC, "_headers"), path.join(OUT_ROOT, "_headers"));

// What the first page load fetches: app.js, the chunks it imports statically, style.css.
const outputs = result.metafile.outputs;
const first = new Set();
const visit = (file) => {
  if (first.has(file)) return;
  first.add(file);
  for (const imp of outputs[file]?.imports ?? []) if (imp.kind === "import-statement") visit(imp.path);
};
// (esbuild marks dynamically imported chunks as entry points too: start from ours.)
for (const file of Object.keys(outputs)) if (/\/console\/(app\.js|style\.css)$/.test(file)) visit(file);
let gz = 0;
for (const f of first) gz += zlib.gzipSync(fs.readFileSync(path.join(ROOT, f)), { level: 9 }).length;
const lazy = Object.keys(outputs).filter((f) => !first.has(f) && !f.endsWith(".map"));
let lazyGz = 0;
for (const f of lazy) lazyGz += zlib.gzipSync(fs.readFileSync(path.join(ROOT, f)), { level: 9 }).length;
console.log(`[console] built dist-console/console: first load ${(gz / 1024).toFixed(1)} KiB gzip JS+CSS, pages and editor loaded later ${(lazyGz / 1024).toFixed(1)} KiB gzip`);
