// The harness of a run_code script: the isolate's entrypoint. It gives the
// script its `hearth` object (each method one call through the bridge the
// parent passed in), keeps its console output, and returns one JSON text:
// the value, the console lines, the error. Everything here is evaluated
// before the script (user.js is imported inside `run`), and it uses only
// what it kept then, so a script that rewrites prototypes changes nothing here.
import { WorkerEntrypoint } from "cloudflare:workers";
import { P, state, waited } from "./guard.js";

const CONFIG = /*CONFIG*/ { tools: {}, maxValueChars: 1, maxLogChars: 1, maxLogLines: 1, maxLineChars: 1 };

// The runtime's own functions, kept by guard.js before anything could change them.
const { apply, stringify, freeze, create, defineProperty, keys } = P;
const toText = P.String;
const isArray = P.isArray;
const slice = (s, a, b) => apply(P.slice, s, [a, b]);
const indexOf = (s, what, from) => apply(P.indexOf, s, [what, from]);
const charCodeAt = (s, i) => apply(P.charCodeAt, s, [i]);
const ErrorType = P.Error;
const TypeErrorType = P.TypeError;

// Console output: kept, bounded, never written to the runtime's own log.
const logs = [];
let logChars = 0;
let droppedLogs = 0;
function show(value) {
  if (typeof value === "string") return value;
  try {
    if (value instanceof ErrorType) return `${value.name}: ${value.message}`;
    const json = stringify(value);
    if (json !== undefined) return json;
  } catch {}
  try {
    return toText(value);
  } catch {
    return "[a value that cannot be shown]";
  }
}
function record(prefix, args) {
  if (logs.length >= CONFIG.maxLogLines || logChars >= CONFIG.maxLogChars) {
    droppedLogs++;
    return;
  }
  let line = prefix;
  for (let i = 0; i < args.length; i++) line += (i ? " " : "") + show(args[i]);
  if (line.length > CONFIG.maxLineChars) line = slice(line, 0, CONFIG.maxLineChars) + "…";
  logChars += line.length;
  logs[logs.length] = line;
}
const log = (...args) => record("", args);
defineProperty(globalThis, "console", {
  value: freeze({
    log,
    info: log,
    debug: log,
    trace: log,
    warn: (...args) => record("warn: ", args),
    error: (...args) => record("error: ", args),
  }),
  writable: true,
  configurable: true,
});
// The runtime's cache would outlive the run and be shared by the next one.
try {
  delete globalThis.caches;
} catch {}

/** The `hearth` object: `hearth.read_file(path)` or `hearth.read_file({ path })`. */
function toolsFor(bridge) {
  const hearth = create(null);
  const names = keys(CONFIG.tools);
  for (let n = 0; n < names.length; n++) {
    const name = names[n];
    const params = CONFIG.tools[name];
    let usage = "";
    for (let i = 0; i < params.length; i++) usage += (i ? ", " : "") + params[i];
    hearth[name] = async function (...args) {
      let input;
      if (args.length === 1 && args[0] !== null && typeof args[0] === "object" && !isArray(args[0])) {
        input = args[0];
      } else {
        if (args.length > params.length) {
          throw new TypeErrorType(`hearth.${name} takes ${params.length} argument(s): ${usage || "none"}`);
        }
        input = create(null);
        for (let i = 0; i < args.length; i++) if (args[i] !== undefined) input[params[i]] = args[i];
      }
      const reply = await bridge.call(name, stringify(input));
      waited();
      if (reply.error) throw new ErrorType(`${name}: ${reply.text}`);
      return reply.text;
    };
  }
  return freeze(hearth);
}

/** The first `user.js:LINE:` in an error's stack. */
function lineOf(stack) {
  const at = indexOf(stack, "user.js:", 0);
  if (at < 0) return 0;
  let line = 0;
  for (let i = at + 8; i < stack.length; i++) {
    const d = charCodeAt(stack, i) - 48;
    if (d < 0 || d > 9) break;
    line = line * 10 + d;
  }
  return line;
}

function describe(e) {
  try {
    try {
      delete ErrorType.prepareStackTrace;
    } catch {}
    if (e instanceof ErrorType) {
      return { name: toText(e.name), message: toText(e.message), line: lineOf(toText(e.stack)) };
    }
    return { name: "thrown", message: show(e), line: 0 };
  } catch {
    return { name: "Error", message: "the script threw something that cannot be read", line: 0 };
  }
}

export class Sandbox extends WorkerEntrypoint {
  async run(bridge) {
    let value = null;
    let valueChars = 0;
    let error = null;
    try {
      const script = await import("./user.js");
      // Called on its own: `this` is undefined in it, not the module.
      const main = script.default;
      if (typeof main !== "function") throw new TypeErrorType("the module's default export is not a function");
      const result = await main(toolsFor(bridge));
      const json = result === undefined ? undefined : stringify(result);
      if (json !== undefined) {
        valueChars = json.length;
        value = json.length > CONFIG.maxValueChars ? slice(json, 0, CONFIG.maxValueChars) : json;
      }
    } catch (e) {
      error = describe(e);
    }
    // The run is over: the script's `hearth` calls nothing any more, and the
    // isolate holds no capability of the parent's once it is let go.
    try {
      bridge[Symbol.dispose]();
    } catch {}
    const { stopped, steps } = state();
    // Built by hand: the script may have given Array.prototype a toJSON.
    let lines = "";
    for (let i = 0; i < logs.length; i++) lines += (i ? "," : "") + stringify(toText(logs[i]));
    return (
      `{"value":${value === null ? "null" : stringify(value)},"valueChars":${valueChars},` +
      `"logs":[${lines}],"droppedLogs":${droppedLogs},` +
      `"error":${error === null ? "null" : `{"name":${stringify(error.name)},"message":${stringify(error.message)},"line":${error.line}}`},` +
      `"stopped":${stringify(stopped)},"steps":${steps}}`
    );
  }
}
