// CPU time (user + system) spent by the workerd processes that Miniflare runs
// for this Node process, read from /proc (Linux). The Worker's own CPU cannot
// be read from inside workerd, and the Node side (stand-ins, Miniflare's
// client) must not count, so the figure is taken per process from the kernel.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** pid, parent pid, command name and utime+stime (in ticks) of one process, or null once it is gone. */
function procStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name is in parentheses and may hold spaces; fields after it are
  // numbered from 3 (state): ppid is field 4, utime 14, stime 15.
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  const f = text.slice(close + 2).split(" ");
  return { pid: Number(pid), ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) };
}

/** Whether workerd CPU can be measured here. */
export const cpuMeasurable = () => fs.existsSync(`/proc/${process.pid}/stat`);

/** The pids of the workerd processes among this process's descendants. */
export function workerdPids(root = process.pid) {
  const byParent = new Map();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(name);
    if (!s) continue;
    if (!byParent.has(s.ppid)) byParent.set(s.ppid, []);
    byParent.get(s.ppid).push(s);
  }
  const found = [];
  const queue = [root];
  while (queue.length) {
    for (const child of byParent.get(queue.shift()) || []) {
      if (child.comm.startsWith("workerd")) found.push(child.pid);
      queue.push(child.pid);
    }
  }
  return found;
}

/**
 * A CPU meter over the workerd processes running now (or those of `pids`,
 * e.g. one of two Miniflares): `read()` gives their total user+sys CPU in
 * ms. The process set is fixed when the meter is made, so a restart in
 * between is an error rather than a wrong figure.
 */
export function workerdCpuMeter(pids = workerdPids()) {
  if (!pids.length) throw new Error("no workerd process found under this Node process");
  return {
    pids,
    read() {
      let ticks = 0;
      for (const pid of pids) {
        const s = procStat(pid);
        if (!s) throw new Error(`workerd ${pid} exited during the measurement`);
        ticks += s.ticks;
      }
      return (ticks * 1000) / TICKS_PER_SECOND;
    },
    /** The clock resolution of `read()`, in ms. */
    resolutionMs: 1000 / TICKS_PER_SECOND,
  };
}

/**
 * A finer meter than [`workerdCpuMeter`]: the CPU time of every thread of
 * the workerd processes, in ms, from `/proc/{pid}/task/{tid}/schedstat`
 * (nanoseconds; the `stat` ticks are 10 ms, too coarse for one turn).
 * Threads started later (V8's compile workers) are counted as they appear.
 */
export function workerdSchedMeter(pids = workerdPids(), { mainOnly = false } = {}) {
  if (!pids.length) throw new Error("no workerd process found under this Node process");
  return {
    pids,
    read() {
      let ns = 0;
      for (const pid of pids) {
        for (const tid of mainOnly ? [String(pid)] : fs.readdirSync(`/proc/${pid}/task`)) {
          try {
            ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
          } catch {
            // a thread that ended between the listing and the read
          }
        }
      }
      return ns / 1e6;
    },
  };
}

/**
 * [`workerdSchedMeter`] of each workerd's main thread only (its thread id is
 * its pid): where every isolate's JavaScript and WASM run and the I/O is
 * driven, without V8's background threads (optimising compiles, concurrent
 * GC), which a turn's own time limit does not count.
 */
export const workerdMainThreadMeter = (pids = workerdPids()) => workerdSchedMeter(pids, { mainOnly: true });

/**
 * What a system's workerd burns idle, per ms (timers, housekeeping), over `ms`:
 * [all threads, the main thread], from its `meter` and `main` meters.
 */
export async function idleRate(sys, ms = 1500) {
  const c0 = sys.meter.read();
  const m0 = sys.main.read();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const span = performance.now() - t0;
  return [(sys.meter.read() - c0) / span, (sys.main.read() - m0) / span];
}
