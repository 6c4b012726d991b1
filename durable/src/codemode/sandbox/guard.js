// The step guard of a run_code script. durable/src/codemode/instrument.rs
// puts a call to `tick` in every loop and at the start of every function
// (and class field) of the script; this module also makes every method of
// the runtime's own objects tick, so that no chain of built-in calls (a
// thenable whose `then` is a built-in, two promises fulfilled with each
// other) can spin without counting.
//
// It is evaluated before the script and the harness: what it keeps (`P`)
// is the runtime's own, whatever the script changes later, and the script
// cannot import it (the rewriter refuses `import`).
const apply = Reflect.apply;
const construct = Reflect.construct;
const ownKeys = Reflect.ownKeys;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const FunctionPrototype = Function.prototype;
const bindOf = Function.prototype.bind;
const defineProperty = Object.defineProperty;
const getPrototypeOf = Object.getPrototypeOf;
const hasOwn = Object.hasOwn;
const now = Date.now;
const StopError = Error;
const NotIterable = TypeError;
const resolve = Promise.resolve.bind(Promise);
const ITERATOR = Symbol.iterator;
const ASYNC_ITERATOR = Symbol.asyncIterator;

/** The runtime's own functions, for the harness (main.js). */
export const P = Object.freeze({
  apply,
  stringify: JSON.stringify,
  String,
  isArray: Array.isArray,
  freeze: Object.freeze,
  create: Object.create,
  defineProperty,
  keys: Object.keys,
  slice: String.prototype.slice,
  indexOf: String.prototype.indexOf,
  charCodeAt: String.prototype.charCodeAt,
  Error,
  TypeError,
});

const MAX_STEPS = /*MAX_STEPS*/ 1;
const WALL_MS = /*WALL_MS*/ 1;
const CPU_MS = /*CPU_MS*/ 1;
const deadline = now() + WALL_MS;
let steps = 0;
let stopped = "";
// Time spent computing, as near as the script can tell: the clock between
// two checks, unless a tool call or a timer was waited for in between.
// (In production the clock stands still while code runs, so this stays 0
// and the runtime's own CPU limit holds; local workerd has none.)
let busy = 0;
let lastCheck = now();
let waitedSince = false;

// What `=> e` assigns its value to (`__hearth_tick().v = e`): kept nowhere.
const sink = Object.freeze(Object.create(null, { v: { set(_) {} } }));

/** One step of the script; throws once over a limit, and at every later step. */
export function tick() {
  if (stopped === "") {
    steps++;
    // The clock is read every 64 steps: a step is a few nanoseconds.
    if (steps <= MAX_STEPS && (steps & 63) !== 0) return sink;
    const t = now();
    if (!waitedSince) busy += t - lastCheck;
    waitedSince = false;
    lastCheck = t;
    if (steps <= MAX_STEPS && busy <= CPU_MS && t <= deadline) return sink;
    stopped =
      steps > MAX_STEPS
        ? `the script ran more than ${MAX_STEPS} steps (an endless loop?)`
        : busy > CPU_MS
          ? `the script computed for more than ${CPU_MS} ms`
          : `the script ran past its time limit (${WALL_MS} ms)`;
  }
  throw new StopError(`stopped: ${stopped}`);
}

/** The script waited (a tool call, a timer): that time was not computing. */
export function waited() {
  waitedSince = true;
}

/** Why the script was stopped ("" if it was not), and the steps it took. */
export function state() {
  return { stopped, steps };
}

/** `for (x of items)`: each round ticks, even when no function of the script runs. */
export function iter(items) {
  tick();
  const method = items == null ? undefined : items[ITERATOR];
  if (typeof method !== "function") throw new NotIterable("the value of a for…of loop is not iterable");
  const it = apply(method, items, []);
  const next = it.next;
  return {
    [ITERATOR]() {
      return this;
    },
    next(v) {
      tick();
      return apply(next, it, [v]);
    },
    return(v) {
      const done = it.return;
      return done == null ? { done: true, value: v } : apply(done, it, [v]);
    },
  };
}

/** `for await (x of items)`. */
export function aiter(items) {
  tick();
  const method = items == null ? undefined : items[ASYNC_ITERATOR];
  if (method == null) return iter(items);
  const it = apply(method, items, []);
  const next = it.next;
  return {
    [ASYNC_ITERATOR]() {
      return this;
    },
    next(v) {
      tick();
      return apply(next, it, [v]);
    },
    return(v) {
      const done = it.return;
      return done == null ? resolve({ done: true, value: v }) : apply(done, it, [v]);
    },
  };
}

// A timer's wait is no computing. (Methods, so they get no `prototype`
// and are wrapped to tick below like the runtime's own.)
const timers = {
  setTimeout(callback, ...rest) {
    return apply(setTimeoutOf, globalThis, [waking(callback), ...rest]);
  },
  setInterval(callback, ...rest) {
    return apply(setIntervalOf, globalThis, [waking(callback), ...rest]);
  },
};
const setTimeoutOf = globalThis.setTimeout;
const setIntervalOf = globalThis.setInterval;
function waking(callback) {
  if (typeof callback !== "function") return callback;
  return function (...args) {
    waitedSince = true;
    return apply(callback, this, args);
  };
}
if (typeof setTimeoutOf === "function") globalThis.setTimeout = timers.setTimeout;
if (typeof setIntervalOf === "function") globalThis.setInterval = timers.setInterval;
if (typeof scheduler === "object" && typeof scheduler.wait === "function") {
  const wait = scheduler.wait;
  const owner = scheduler;
  scheduler.wait = async function (...args) {
    const result = await apply(wait, owner, args);
    waitedSince = true;
    return result;
  };
}

// Every method of the runtime's objects ticks: a wrapper that counts a step,
// then calls the method with the same `this` and arguments. Constructors,
// getters and setters stay as they are (a constructor called as a `then`
// without `new` throws, and a getter takes no argument to call back).
const done = new WeakSet();
const weakHas = WeakSet.prototype.has;
const weakAdd = WeakSet.prototype.add;
const seen = (o) => apply(weakHas, done, [o]);
const mark = (o) => apply(weakAdd, done, [o]);
/** Whether `f` is a constructor: the runtime's have a `prototype`, its methods none (Proxy has none either). */
const isConstructor = (f) => f === Proxy || hasOwn(f, "prototype");
function ticking(method) {
  return function () {
    tick();
    return apply(method, this, arguments);
  };
}
function wrapMethods(o) {
  if (o === null || (typeof o !== "object" && typeof o !== "function") || seen(o)) return;
  mark(o);
  const names = ownKeys(o);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const d = getOwnPropertyDescriptor(o, name);
    if (!d || !hasOwn(d, "value") || typeof d.value !== "function" || !d.configurable) continue;
    const f = d.value;
    if (f === bindOf && o === FunctionPrototype) continue;
    if (isConstructor(f)) {
      // A constructor: its statics and its instances' methods.
      if (!leaves.has(name)) {
        wrapMethods(f);
        wrapMethods(f.prototype);
      }
      continue;
    }
    defineProperty(o, name, { value: ticking(f), writable: d.writable, enumerable: d.enumerable, configurable: true });
  }
  wrapMethods(getPrototypeOf(o));
}
// What never calls a function it is given (only the coercions every
// built-in does, looked up on the values, which tick if they are methods)
// cannot be a link in such a chain: left as it is, for a faster start.
const leafSet = new Set([
  "Math", "Date", "Intl", "WebAssembly", "DataView", "ArrayBuffer", "SharedArrayBuffer", "Atomics", "Symbol",
  "BigInt", "Number", "Boolean", "WeakMap", "WeakSet", "WeakRef", "crypto", "performance", "navigator", "Cloudflare",
  "console", "parseInt", "parseFloat", "isNaN", "isFinite", "encodeURI", "encodeURIComponent", "decodeURI",
  "decodeURIComponent", "escape", "unescape", "btoa", "atob", "structuredClone",
]);
const setHas = Set.prototype.has;
const leaves = { has: (name) => apply(setHas, leafSet, [name]) };
// The prototypes no global names: iterators, generators, typed arrays, crypto.subtle's.
const hidden = [
  getPrototypeOf([][ITERATOR]()),
  getPrototypeOf(new Map()[ITERATOR]()),
  getPrototypeOf(new Set()[ITERATOR]()),
  getPrototypeOf(""[ITERATOR]()),
  getPrototypeOf(/a/[Symbol.matchAll](""))
];
const generator = function* () {};
const asyncGenerator = async function* () {};
hidden.push(getPrototypeOf(generator.prototype), getPrototypeOf(asyncGenerator.prototype), getPrototypeOf(Uint8Array));
{
  const globals = ownKeys(globalThis);
  for (let i = 0; i < globals.length; i++) {
    if (leaves.has(globals[i])) continue;
    const d = getOwnPropertyDescriptor(globalThis, globals[i]);
    if (d && hasOwn(d, "value")) {
      const v = d.value;
      if (typeof v === "function" && !isConstructor(v) && d.configurable) {
        defineProperty(globalThis, globals[i], { value: ticking(v), writable: d.writable, enumerable: d.enumerable, configurable: true });
      } else {
        wrapMethods(v);
      }
    }
  }
  for (let i = 0; i < hidden.length; i++) wrapMethods(hidden[i]);
}

// A bound function runs no code of the script: bound functions tick too
// (binding a method already bound to the runtime's original is not possible:
// every method is the ticking wrapper by now).
defineProperty(Function.prototype, "bind", {
  value: function bind(self, ...bound) {
    const target = this;
    if (typeof target !== "function") throw new TypeError("bind must be called on a function");
    return function (...args) {
      tick();
      return new.target ? construct(target, [...bound, ...args], new.target) : apply(target, self, [...bound, ...args]);
    };
  },
  writable: true,
  configurable: true,
});
