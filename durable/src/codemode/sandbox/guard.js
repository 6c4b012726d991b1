// The step guard of a run_code script (durable/src/codemode/instrument.rs
// puts a call to `tick` in every loop and at the start of every function).
// This module is evaluated before the script, so what it keeps (Date.now,
// Error, Reflect.apply, Function.prototype.bind) is the runtime's own,
// whatever the script changes later; the script cannot import it.
const now = Date.now;
const apply = Reflect.apply;
const construct = Reflect.construct;
const StopError = Error;
const NotIterable = TypeError;
const resolve = Promise.resolve.bind(Promise);
const defineProperty = Object.defineProperty;
const ITERATOR = Symbol.iterator;
const ASYNC_ITERATOR = Symbol.asyncIterator;

const MAX_STEPS = /*MAX_STEPS*/ 1;
const WALL_MS = /*WALL_MS*/ 1;
const deadline = now() + WALL_MS;
let steps = 0;
let stopped = "";

// What `=> e` assigns its value to (`__hearth_tick().v = e`): kept nowhere.
const sink = Object.freeze(Object.create(null, { v: { set(_) {} } }));

/** One step of the script; throws once over the limit, and at every later step. */
export function tick() {
  if (stopped === "") {
    steps++;
    // The clock is read every 64 steps: a step is a few nanoseconds.
    if (steps <= MAX_STEPS && ((steps & 63) !== 0 || now() <= deadline)) return sink;
    stopped =
      steps > MAX_STEPS
        ? `the script ran more than ${MAX_STEPS} steps (an endless loop?)`
        : `the script ran past its time limit (${WALL_MS} ms)`;
  }
  throw new StopError(`stopped: ${stopped}`);
}

/** Why the script was stopped ("" if it was not), and the steps it took. */
export function state() {
  return { stopped, steps };
}

function callable(items) {
  const method = items == null ? undefined : items[ITERATOR];
  if (typeof method !== "function") throw new NotIterable("the value of a for…of loop is not iterable");
  return apply(method, items, []);
}

/** `for (x of items)`: each round ticks, even when no function of the script runs. */
export function iter(items) {
  tick();
  const it = callable(items);
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

// A bound function runs no code of the script, so a cycle of them (a
// thenable whose `then` is a bound `Promise.prototype.then`) would spin the
// microtask queue for ever unguarded: bound functions tick too.
defineProperty(Function.prototype, "bind", {
  value: function bind(self, ...bound) {
    const target = this;
    if (typeof target !== "function") throw new TypeError("bind must be called on a function");
    return function bound_(...args) {
      tick();
      return new.target ? construct(target, [...bound, ...args], new.target) : apply(target, self, [...bound, ...args]);
    };
  },
  writable: true,
  configurable: true,
});
