// A line diff (LCS) for the Review dialog: removed lines red, added green.
import { h } from "../dom.js";

export function lineDiff(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  const n = x.length;
  const m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) out.push(h("div", {}, `  ${x[i++]}`)), j++;
    else if (i < n && (j >= m || L[i + 1][j] >= L[i][j + 1])) out.push(h("div", { class: "del" }, `- ${x[i++]}`));
    else out.push(h("div", { class: "add" }, `+ ${y[j++]}`));
  }
  return h("pre", { class: "diff-lines", "aria-label": "Line changes" }, out);
}
