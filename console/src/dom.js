// A tiny element builder: h("button", {onclick, class: "x"}, "text", child).
// Text goes in as text nodes, never as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value" && (tag === "textarea" || tag === "input")) el.value = String(v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An SVG element (charts). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** Set by a page with unsaved edits: `guard()` says whether the page may be
 * left (it asks the user); `guard(true)` only tells (a reload: the browser asks). */
export const leaving = { guard: null };

let statusTimer;
/** A short message in the live region (screen readers hear it); it goes by itself. */
export function say(text, { error = false } = {}) {
  const el = document.getElementById("status");
  el.textContent = text;
  el.classList.toggle("error", error);
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => (el.textContent = ""), error ? 8000 : 3000);
}

/** Replaces main's content with a titled page. */
export function page(title, ...children) {
  const main = document.getElementById("main");
  main.replaceChildren(h("h1", {}, title), ...children.filter((c) => c !== null && c !== undefined && c !== false));
  main.removeAttribute("aria-busy");
  document.title = `${title} · Hearth console`;
  return main;
}

/** Marks `el` as loading (aria-busy) while `work` runs; returns its result. */
export async function busy(el, work) {
  el.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    el.removeAttribute("aria-busy");
  }
}

/** A "Loading…" line for a region being filled. */
export const loading = (what = "Loading…") => h("p", { class: "muted loading" }, what);

/** An error told in place (and to screen readers). */
export const problem = (message) => h("p", { class: "error", role: "alert" }, message);

export const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : "—");
export const fmtUsd = (x) => (x === null || x === undefined ? "—" : `$${Number(x).toFixed(4)}`);
export const fmtInt = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));
export const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)} %`);

/** `ms` as a date and time in `timeZone` (the agent's), e.g. "Fri 27 Nov, 13:00". */
export function fmtLocal(ms, timeZone) {
  if (!ms) return "—";
  try {
    return new Intl.DateTimeFormat("en-GB", { timeZone: timeZone || undefined, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }).format(new Date(ms));
  } catch {
    return new Date(ms).toLocaleString();
  }
}

/** How far `ms` is from now, in words ("in 5 min", "2 h ago"). */
export function fmtAgo(ms, now = Date.now()) {
  if (!ms) return "";
  const d = ms - now;
  const a = Math.abs(d);
  const words = a < 60_000 ? "less than a minute" : a < 3_600_000 ? `${Math.round(a / 60_000)} min` : a < 172_800_000 ? `${Math.round(a / 3_600_000)} h` : `${Math.round(a / 86_400_000)} days`;
  return d >= 0 ? `in ${words}` : `${words} ago`;
}
