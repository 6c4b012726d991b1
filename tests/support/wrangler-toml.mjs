// wrangler.toml, read as wrangler reads it, for the one place that builds
// Miniflare (miniflare.mjs). A reader of the TOML this file uses (tables,
// arrays of tables, strings, numbers, booleans, arrays and inline tables,
// comments) rather than wrangler's own: importing wrangler takes ~1.8 s,
// once per test file. tests/harness.test.mjs holds this reader to wrangler's
// (`unstable_readConfig`) on the real file, so the two cannot drift apart.
import fs from "node:fs";

/** The parsed TOML of `file` (a plain object). Throws, naming the line, on what it cannot read. */
export function readToml(file) {
  return parseToml(fs.readFileSync(file, "utf8"), file);
}

export function parseToml(text, name = "toml") {
  const root = {};
  let table = root;
  const src = text.replace(/\r\n/g, "\n");
  let i = 0;
  let line = 1;
  const fail = (why) => {
    throw new Error(`${name}:${line}: ${why}`);
  };
  const skipSpace = (newlines) => {
    for (;;) {
      const c = src[i];
      if (c === " " || c === "\t") i++;
      else if (c === "#") while (i < src.length && src[i] !== "\n") i++;
      else if (newlines && c === "\n") (i++, line++);
      else return;
    }
  };
  const key = () => {
    skipSpace(false);
    if (src[i] === '"') return string();
    const m = /^[A-Za-z0-9_-]+/.exec(src.slice(i));
    if (!m) fail("a key expected");
    i += m[0].length;
    return m[0];
  };
  const dotted = () => {
    const parts = [key()];
    for (skipSpace(false); src[i] === "."; skipSpace(false)) (i++, parts.push(key()));
    return parts;
  };
  const string = () => {
    const quote = src[i++];
    let out = "";
    while (src[i] !== quote) {
      if (i >= src.length || src[i] === "\n") fail("an unterminated string");
      if (quote === '"' && src[i] === "\\") {
        const e = src[++i];
        const simple = { n: "\n", t: "\t", r: "\r", '"': '"', "\\": "\\" }[e];
        if (simple !== undefined) (out += simple, i++);
        else if (e === "u") (out += String.fromCharCode(parseInt(src.slice(i + 1, i + 5), 16)), (i += 5));
        else fail(`an unknown escape \\${e}`);
      } else out += src[i++];
    }
    i++;
    return out;
  };
  const value = () => {
    skipSpace(false);
    const c = src[i];
    if (c === '"' || c === "'") return string();
    if (c === "[") {
      i++;
      const out = [];
      for (;;) {
        skipSpace(true);
        if (src[i] === "]") return (i++, out);
        out.push(value());
        skipSpace(true);
        if (src[i] === ",") i++;
        else if (src[i] !== "]") fail("',' or ']' expected in an array");
      }
    }
    if (c === "{") {
      i++;
      const out = {};
      for (;;) {
        skipSpace(false);
        if (src[i] === "}") return (i++, out);
        assign(out, dotted());
        skipSpace(false);
        if (src[i] === ",") i++;
        else if (src[i] !== "}") fail("',' or '}' expected in an inline table");
      }
    }
    const m = /^(true|false|[+-]?\d[\d_]*(\.\d+)?)/.exec(src.slice(i));
    if (!m) fail("a value expected");
    i += m[0].length;
    return m[0] === "true" ? true : m[0] === "false" ? false : Number(m[0].replace(/_/g, ""));
  };
  const into = (obj, parts) => {
    for (const p of parts) {
      if (obj[p] === undefined) obj[p] = {};
      obj = Array.isArray(obj[p]) ? obj[p].at(-1) : obj[p];
    }
    return obj;
  };
  function assign(obj, parts) {
    skipSpace(false);
    if (src[i] !== "=") fail("'=' expected");
    i++;
    const target = into(obj, parts.slice(0, -1));
    const last = parts.at(-1);
    if (last in target) fail(`${parts.join(".")} is set twice`);
    target[last] = value();
  }
  for (;;) {
    skipSpace(true);
    if (i >= src.length) return root;
    if (src.startsWith("[[", i)) {
      i += 2;
      const parts = dotted();
      if (!src.startsWith("]]", i)) fail("']]' expected");
      i += 2;
      const parent = into(root, parts.slice(0, -1));
      const last = parts.at(-1);
      parent[last] ??= [];
      if (!Array.isArray(parent[last])) fail(`${parts.join(".")} is a table, not an array of tables`);
      table = {};
      parent[last].push(table);
    } else if (src[i] === "[") {
      i++;
      const parts = dotted();
      if (src[i] !== "]") fail("']' expected");
      i++;
      table = into(root, parts);
    } else {
      assign(table, dotted());
    }
    skipSpace(false);
    if (i < src.length && src[i] !== "\n") fail("the end of the line expected");
  }
}
