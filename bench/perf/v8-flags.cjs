// Preload (`node --require bench/perf/v8-flags.cjs ...`) that hands workerd
// the V8 flags in HEARTH_V8_FLAGS (space-separated), for measurements only:
// workerd's config has a `v8Flags` list, Miniflare does not expose it, so this
// adds it where Miniflare assembles the config (its one `structuredLogging:`
// line, matched exactly: a Miniflare that no longer has it fails loudly here
// instead of measuring without the flags). Nothing the Worker or the tests
// run loads this file.
const Module = require("node:module");
const path = require("node:path");

const FLAGS = (process.env.HEARTH_V8_FLAGS || "").split(" ").filter(Boolean);
const MARK = "structuredLogging: this.#structuredWorkerdLogs";
const MINIFLARE = path.join("miniflare", "dist", "src", "index.js");

const compile = Module.prototype._compile;
Module.prototype._compile = function (content, filename) {
  if (FLAGS.length && filename.endsWith(MINIFLARE)) {
    if (content.split(MARK).length !== 2) throw new Error(`v8-flags.cjs: ${filename} has no single "${MARK}" line`);
    content = content.replace(MARK, `${MARK}, v8Flags: ${JSON.stringify(FLAGS)}`);
  }
  return compile.call(this, content, filename);
};
