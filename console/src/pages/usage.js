// Usage: figures, cache hit rate, budget left, and bar charts (inline SVG)
// by model, by kind and by day, all from one report (its byDay).
import { agentPath, get } from "../api.js";
import { busy, fmtInt, fmtUsd, h, page, pct, s } from "../dom.js";

/** A horizontal bar chart; each bar carries data-label / data-value. */
export function barChart(title, rows, format) {
  const barH = 22;
  const labelW = 110;
  const width = 380;
  const max = Math.max(0, ...rows.map((r) => r.value));
  const height = Math.max(1, rows.length) * (barH + 6) + 30;
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, "data-chart": title });
  svg.append(s("title", {}, title), s("text", { x: 4, y: 16, "font-weight": "600" }, title));
  rows.forEach((r, i) => {
    const y = 26 + i * (barH + 6);
    const w = max > 0 ? Math.max(1, ((width - labelW - 70) * r.value) / max) : 1;
    svg.append(
      s("text", { x: 4, y: y + 15 }, r.label.length > 17 ? `${r.label.slice(0, 16)}…` : r.label),
      s("rect", { x: labelW, y, width: w.toFixed(1), height: barH, rx: 3, "data-label": r.label, "data-value": r.value }, s("title", {}, `${r.label}: ${format(r.value)}`)),
      s("text", { x: labelW + w + 6, y: y + 15 }, format(r.value)),
    );
  });
  if (!rows.length) svg.append(s("text", { x: 4, y: 40 }, "No calls in this period."));
  return svg;
}

/** The last `n` local days (YYYY-MM-DD in `timezone`) that fall in the period starting at `from` (ms, or null). */
function localDays(timezone, n, from) {
  const fmt = new Intl.DateTimeFormat("en-CA", { timeZone: timezone, year: "numeric", month: "2-digit", day: "2-digit" });
  const first = from === null || from === undefined ? "" : fmt.format(new Date(from));
  const days = [];
  for (let i = n - 1; i >= 0; i--) days.push(fmt.format(new Date(Date.now() - i * 86400000)));
  return [...new Set(days)].filter((d) => d >= first);
}

function budgetRow(name, b) {
  if (!b) return h("tr", {}, h("th", { scope: "row" }, name), h("td", { colspan: 3 }, "no limit"));
  const left = b.leftUsd !== null && b.leftUsd !== undefined ? fmtUsd(b.leftUsd) : b.leftTokens !== null ? `${fmtInt(b.leftTokens)} tokens` : "—";
  return h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, b.limitUsd !== null ? fmtUsd(b.limitUsd) : `${fmtInt(b.limitTokens)} tokens`), h("td", {}, left), h("td", {}, `${b.percent ?? 0} %${b.reached ? " (reached)" : ""}`));
}

export async function usagePage(state, period = sessionStorage.getItem("hearth-period") || "month") {
  const agent = state.agent;
  const r = await get(agentPath(agent, `/usage?period=${encodeURIComponent(period)}`));
  const asOf = new Date();
  const redraw = (p) => busy(document.getElementById("main"), () => usagePage(state, p));
  const select = h("select", { id: "period" }, [["today", "Today"], ["month", "This month"], ["all", "All time"]].map(([p, label]) => h("option", { value: p, selected: p === period }, label)));
  select.addEventListener("change", () => {
    sessionStorage.setItem("hearth-period", select.value);
    redraw(select.value);
  });
  const byModel = Object.entries(r.byModel ?? {}).map(([label, f]) => ({ label, value: f.cost ?? 0, tokens: f.tokens }));
  const byKind = Object.entries(r.byKind ?? {}).map(([label, f]) => ({ label, value: f.tokens }));
  // The period's last 7 days (fewer early in a month, one for today), from byDay.
  const cost = new Map((r.byDay ?? []).map((d) => [d.date, d.costUsd]));
  const dayRows = localDays(r.timezone || "UTC", 7, r.from).map((d) => ({ label: d, value: cost.get(d) ?? 0 }));
  page(
    "Usage",
    h("div", { class: "row" }, h("label", { for: "period" }, "Period"), select, h("span", { class: "muted" }, `days in ${r.timezone}`)),
    h(
      "p",
      { class: "muted as-of", "data-as-of": asOf.toISOString() },
      `As of ${asOf.toLocaleTimeString()}. A conversation reports its calls within about a minute, so the last minute may be missing. `,
      h("button", { type: "button", class: "secondary small", id: "refresh", onclick: () => redraw(period) }, "Refresh"),
    ),
    h(
      "div",
      { class: "figures", role: "group", "aria-label": "Totals" },
      h("div", { "data-figure": "cost" }, "Cost", h("b", {}, fmtUsd(r.totalCost))),
      h("div", { "data-figure": "calls" }, "Calls", h("b", {}, fmtInt(r.calls))),
      h("div", { "data-figure": "tokens" }, "Tokens", h("b", {}, fmtInt(r.totalTokens))),
      h("div", { "data-figure": "cache" }, "Cache hit rate", h("b", {}, pct(r.cacheHitRate))),
    ),
    r.unpricedModels?.length ? h("p", { class: "muted" }, `No price for: ${r.unpricedModels.join(", ")} (add it to LLM_PRICES to see its cost)`) : null,
    h("div", { class: "grid3" }, barChart("Cost by model (USD)", byModel, fmtUsd), barChart("Tokens by kind", byKind, fmtInt), barChart("Cost by day (USD)", dayRows, fmtUsd)),
    h("h2", {}, "Budget"),
    h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Budget" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Period"), h("th", { scope: "col" }, "Limit"), h("th", { scope: "col" }, "Left"), h("th", { scope: "col" }, "Used"))), h("tbody", {}, budgetRow("Daily", r.budget?.daily), budgetRow("Monthly", r.budget?.monthly)))),
  );
}
