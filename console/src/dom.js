// A tiny element builder: h("button", {onclick, class: "x"}, "text", child).
// Text goes in as text nodes, never as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
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

let statusTimer;
/** A short message in the live region (screen readers hear it). */
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
  document.title = `${title} · Hearth console`;
  return main;
}

export const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : "—");
export const fmtUsd = (x) => (x === null || x === undefined ? "—" : `$${Number(x).toFixed(4)}`);
export const fmtInt = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));
export const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)} %`);
