// A workspace file's history (README "Workspace history and undo"): its
// versions newest first with who and why, what each change did (a diff),
// and restore. GET|POST /api/agents/{id}/history/{path}.
import { agentPath, get, getText, post } from "../api.js";
import { busy, fmtAgo, fmtLocal, h, loading, problem, say } from "../dom.js";

const WHO = { agent: "the agent", owner: "you", dreaming: "dreaming", pins: "a pinned update", seed: "the seed script", reset: "a reset" };
export const who = (actor) => WHO[actor] ?? actor;
const filePath = (path) => path.split("/").map(encodeURIComponent).join("/");
export const historyPath = (agent, path) => agentPath(agent, `/history/${filePath(path)}`);

/** A unified diff, lines coloured (removed red, added green). */
export function diffView(text, label) {
  const lines = text.split("\n").map((l) => {
    const cls = l.startsWith("+++") || l.startsWith("---") ? "meta" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "";
    return h("div", { class: cls }, l || " ");
  });
  return h("pre", { class: "diff-lines", tabindex: "0", "aria-label": label }, lines);
}

/** What a change was, in words. */
export function changeWords(c) {
  if (!c.sha256) return "deleted";
  if (!c.previous) return "created";
  return c.undoes ? "undone" : "changed";
}

/** Restores `path` to `version` (a rev or sha256:…); says so; `after()` redraws. */
export async function restore(agent, path, version, why, after) {
  try {
    await post(historyPath(agent, path), { restore: version, why });
    say(`Restored ${path}`);
    await after();
  } catch (err) {
    say(`Could not restore ${path}: ${err.message}`, { error: true });
  }
}

/** The history panel of `path` (agent layer); `after()` redraws the page after a restore. */
export function historyPanel(agent, path, timeZone, after) {
  const list = h("ol", { class: "versions", "aria-label": `Versions of ${path}` });
  const detail = h("div", { class: "version-detail" });
  const panel = h("section", { class: "history card", "aria-labelledby": "history-title" }, h("h3", { id: "history-title" }, "History"), list, detail);
  busy(panel, async () => {
    list.replaceChildren(h("li", {}, loading()));
    let versions;
    try {
      versions = (await get(historyPath(agent, path))).versions ?? [];
    } catch (err) {
      list.replaceChildren(h("li", {}, problem(`The history could not be read: ${err.message}`)));
      return;
    }
    if (!versions.length) {
      list.replaceChildren(h("li", { class: "muted" }, "No changes kept yet: the history starts with the first edit of this agent's copy."));
      return;
    }
    list.replaceChildren(
      ...versions.map((c, i) => {
        const showDiff = async () => {
          const from = c.previous ? `sha256:${c.previous}` : null;
          detail.replaceChildren(loading());
          try {
            if (!from) {
              const text = c.sha256 ? await getText(`${historyPath(agent, path)}?version=${encodeURIComponent(c.rev)}`) : "";
              detail.replaceChildren(h("h4", {}, `Created ${fmtLocal(c.at, timeZone)}`), h("pre", { class: "file-text", tabindex: "0" }, String(text)));
              return;
            }
            const to = c.sha256 ? c.rev : "current";
            const diff = await getText(c.sha256 ? `${historyPath(agent, path)}?diff=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}` : `${historyPath(agent, path)}?version=${encodeURIComponent(from)}`);
            detail.replaceChildren(h("h4", {}, c.sha256 ? `What this change did (${fmtLocal(c.at, timeZone)})` : `The content deleted ${fmtLocal(c.at, timeZone)}`), c.sha256 ? diffView(String(diff), `Changes of ${fmtLocal(c.at, timeZone)}`) : h("pre", { class: "file-text", tabindex: "0" }, String(diff)));
          } catch (err) {
            detail.replaceChildren(problem(err.message));
          }
        };
        const version = c.sha256 ? c.rev : c.previous ? `sha256:${c.previous}` : null;
        const restoreLabel = c.sha256 ? (i === 0 ? null : "Restore this version") : "Restore what was deleted";
        return h(
          "li",
          { "data-rev": c.rev },
          h("div", {}, h("strong", {}, changeWords(c)), ` by ${who(c.actor)}`, c.why ? h("span", { class: "muted", title: c.why }, ` · ${c.why.replace(/sha256:([0-9a-f]{8})[0-9a-f]{56}/g, "sha256:$1…")}`) : null),
          h("div", { class: "muted small" }, h("time", { datetime: new Date(c.at).toISOString() }, fmtLocal(c.at, timeZone)), ` (${fmtAgo(c.at)})`, i === 0 ? " · current" : ""),
          h(
            "div",
            { class: "row" },
            h("button", { type: "button", class: "secondary small", onclick: showDiff }, c.sha256 ? "Show changes" : "Show deleted text"),
            restoreLabel && version ? h("button", { type: "button", class: "secondary small", onclick: () => restore(agent, path, version, `restored in the console (${changeWords(c)} ${new Date(c.at).toISOString()})`, after) }, restoreLabel) : null,
          ),
        );
      }),
    );
  });
  return panel;
}
