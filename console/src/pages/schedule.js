// Schedule: heartbeat and jobs, next and recent runs, their tokens/cost,
// warnings. The status is shown as the object gives it, in tables.
import { agentPath, get } from "../api.js";
import { fmtTime, h, page } from "../dom.js";

const isTime = (k, v) => typeof v === "number" && v > 1e12 && /(at|At|next|last|Run|time)/.test(k);

function value(k, v) {
  if (v === null || v === undefined) return "—";
  if (isTime(k, v)) return fmtTime(v);
  if (Array.isArray(v)) {
    if (!v.length) return "none";
    if (typeof v[0] !== "object") return v.join(", ");
    const cols = [...new Set(v.flatMap((o) => Object.keys(o)))];
    return h("table", {}, h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))), h("tbody", {}, v.map((o) => h("tr", {}, cols.map((c) => h("td", {}, value(c, o[c])))))));
  }
  if (typeof v === "object") return table(v);
  return String(v);
}

function table(obj) {
  return h("table", {}, h("tbody", {}, Object.entries(obj).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, value(k, v))))));
}

export async function schedulePage(state) {
  const s = await get(agentPath(state.agent, "/schedule"));
  const { warnings, ...rest } = s;
  page(
    "Schedule",
    warnings?.length ? h("ul", { class: "error", "aria-label": "Warnings" }, warnings.map((w) => h("li", {}, typeof w === "string" ? w : JSON.stringify(w)))) : null,
    h("div", { class: "card" }, table(rest)),
  );
}
