// Workspace (seed 001's operator view): every file the overlay resolves for
// the agent with where it comes from, edited in CodeMirror (loaded on
// demand); saving an inherited file makes an override, deleting an override
// re-inherits; pinned guardrail updates are reviewed (a diff) and accepted,
// for one agent or every agent of the template. The template and defaults
// layers are edited the same way.
import { agentPath, del, get, post, request } from "../api.js";
import { h, page, say } from "../dom.js";
import { lineDiff } from "./diff.js";

const LABEL = { agent: "override", template: "from template", defaults: "from defaults", pinned: "pinned" };

export function sourceBadge(f, layer) {
  if (f.updateAvailable) return h("span", { class: "src src-update", "data-source": "update" }, "update available");
  const source = layer === "agent" ? f.source : "agent";
  const text = layer === "agent" ? LABEL[f.source] : f.pinned ? "pinned file" : "in this layer";
  return h("span", { class: `src src-${source}`, "data-source": f.source }, text);
}

function layerBase(state, layer) {
  if (layer === "agent") return agentPath(state.agent, "/workspace");
  if (layer === "defaults") return "/api/defaults/workspace";
  return `/api/templates/${encodeURIComponent(layer.slice("template:".length))}/workspace`;
}

const filePath = (base, path) => `${base}/${path.split("/").map(encodeURIComponent).join("/")}`;

export async function workspacePage(state, layer = sessionStorage.getItem("hearth-layer") || "agent", open = null) {
  const base = layerBase(state, layer);
  let data;
  try {
    data = await get(base);
  } catch (err) {
    if (layer === "agent") throw err;
    return workspacePage(state, "agent");
  }
  // The API keeps listing order; shown sorted (folders after root files).
  const byPath = (a, b) => (a.path.includes("/") - b.path.includes("/")) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  data.files.sort(byPath);
  data.skills?.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.local - a.local));
  const template = layer === "agent" ? data.template : state.template;
  if (layer === "agent") state.template = data.template;
  const choices = [["agent", `Agent ${state.agent}`], ...(template ? [[`template:${template}`, `Template ${template}`]] : []), ["defaults", "Defaults"]];
  const picker = h("select", { id: "layer" }, choices.map(([v, t]) => h("option", { value: v, selected: v === layer }, t)));
  picker.addEventListener("change", () => {
    sessionStorage.setItem("hearth-layer", picker.value);
    workspacePage(state, picker.value);
  });
  const pane = h("section", { class: "card", "aria-label": "File" }, h("p", { class: "muted" }, "Pick a file to open it."));
  const reviewDialog = h("dialog", { "aria-labelledby": "review-title" });
  const kind = layer === "agent" ? "agent" : "shared";
  const tree = h(
    "ul",
    { class: "tree", "aria-label": "Files" },
    data.files.map((f) =>
      h("li", { "data-path": f.path }, h("button", { type: "button", onclick: () => openFile(f) }, h("span", {}, f.path), sourceBadge(f, kind))),
    ),
  );
  let editor = null;

  async function openFile(f) {
    for (const b of tree.querySelectorAll("button")) b.removeAttribute("aria-current");
    tree.querySelector(`li[data-path="${CSS.escape(f.path)}"] button`)?.setAttribute("aria-current", "true");
    const file = f.new ? { content: "", ...f } : await get(filePath(base, f.path));
    const host = h("div", { class: "editor" });
    const actions = h("div", { class: "row" });
    const isOverride = kind === "agent" && f.source === "agent";
    actions.append(h("button", { type: "button", id: "save", onclick: () => save(f) }, kind === "agent" && !isOverride ? "Save as override" : "Save"));
    if (isOverride || (kind === "shared" && !f.new)) {
      const label = isOverride && f.inheritsOnDelete ? "Revert override" : "Delete file";
      actions.append(h("button", { type: "button", class: "danger", id: "revert", onclick: () => remove(f) }, label));
    }
    if (f.updateAvailable) actions.append(h("button", { type: "button", class: "secondary", id: "review", onclick: () => review(f.path) }, "Review update"));
    const where = kind === "agent" ? `${LABEL[f.source] ?? f.source} · ${file.key ?? ""}` : file.key ?? "";
    pane.replaceChildren(h("h2", { id: "file-title" }, f.path), h("p", { class: "muted" }, where), actions, host);
    editor?.destroy();
    const { createEditor } = await import("../editor.js");
    editor = createEditor(host, file.content, { label: `Content of ${f.path}` });
    pane.dataset.open = f.path;
  }

  async function save(f) {
    let url = filePath(base, f.path);
    if (kind === "agent" && f.pinned) {
      if (!confirm(`${f.path} is a pinned guardrail file. Override it for this agent anyway?`)) return;
      url += "?accept=override";
    }
    try {
      await request("PUT", url, { body: editor.get(), headers: { "content-type": "text/plain; charset=utf-8" } });
      say(`Saved ${f.path}`);
      await workspacePage(state, layer, f.path);
    } catch (err) {
      say(err.message, { error: true });
    }
  }

  async function remove(f) {
    const what = kind === "agent" ? (f.inheritsOnDelete ? `Revert ${f.path}? It inherits again.` : `Delete ${f.path}?`) : `Delete ${f.path}? This layer keeps no history.`;
    if (!confirm(what)) return;
    try {
      await del(filePath(base, f.path));
      say(`Removed ${f.path}`);
      await workspacePage(state, layer, f.path);
    } catch (err) {
      say(err.message, { error: true });
    }
  }

  async function review(file) {
    const pin = data.pins?.files?.find((p) => p.file === file) ?? {};
    const accept = async (bulk) => {
      const url = bulk ? `/api/templates/${encodeURIComponent(data.template)}/pins/${encodeURIComponent(file)}/accept` : agentPath(state.agent, `/pins/${encodeURIComponent(file)}/accept`);
      try {
        const r = await post(url);
        reviewDialog.close();
        say(bulk ? `Accepted for ${r.result?.succeeded ?? 0} agent(s) of ${data.template}` : `Accepted ${file}`);
        await workspacePage(state, layer, file);
      } catch (err) {
        say(err.message, { error: true });
      }
    };
    reviewDialog.replaceChildren(
      h("h2", { id: "review-title" }, `Review ${file}: pinned vs latest template`),
      h("div", { class: "diff" }, h("div", {}, h("h3", {}, "Pinned (served now)"), h("pre", { class: "pinned" }, pin.pinnedContent ?? "")), h("div", {}, h("h3", {}, "Latest template"), h("pre", { class: "current" }, pin.currentContent ?? ""))),
      h("h3", {}, "Changes"),
      lineDiff(pin.pinnedContent ?? "", pin.currentContent ?? ""),
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", id: "accept", onclick: () => accept(false) }, `Accept for ${state.agent}`),
        h("button", { type: "button", class: "secondary", id: "accept-bulk", onclick: () => accept(true) }, `Accept for every agent of ${data.template}`),
        h("button", { type: "button", class: "secondary", onclick: () => reviewDialog.close() }, "Cancel"),
      ),
    );
    reviewDialog.showModal();
  }

  // A template's layer: which agents have a pinned update waiting, accepted in bulk.
  let pending = null;
  if (layer.startsWith("template:")) {
    const name = layer.slice("template:".length);
    const waiting = (await get("/api/pins/pending").catch(() => ({ agents: [] }))).agents.filter((a) => a.template === name);
    const files = [...new Set(waiting.flatMap((a) => a.files))];
    const acceptAll = async (file) => {
      try {
        const r = await post(`/api/templates/${encodeURIComponent(name)}/pins/${encodeURIComponent(file)}/accept`);
        say(`Accepted ${file} for ${r.result?.succeeded ?? 0} agent(s)${r.result?.failed ? `, ${r.result.failed} failed` : ""}`);
        await workspacePage(state, layer);
      } catch (err) {
        say(err.message, { error: true });
      }
    };
    pending = h(
      "section",
      { "aria-labelledby": "pending-title" },
      h("h2", { id: "pending-title" }, "Pinned updates waiting"),
      files.length
        ? h("ul", {}, files.map((f) => h("li", { "data-pending": f }, `${f}: ${waiting.filter((a) => a.files.includes(f)).map((a) => a.agent).join(", ")} `, h("button", { type: "button", class: "secondary", onclick: () => acceptAll(f) }, `Accept ${f} for all`))))
        : h("p", { class: "muted" }, "Every agent of this template serves its latest guardrails."),
    );
  }
  const newPath = h("input", { id: "new-path", placeholder: "notes/idea.md", size: 18 });
  const skills = data.skills
    ? h(
        "section",
        { "aria-labelledby": "skills-title" },
        h("h2", { id: "skills-title" }, "Skills"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Skill"), h("th", {}, "Where"), h("th", {}, "What"), h("th", {}, "Status"))), h("tbody", {}, data.skills.map((s) => h("tr", { "data-skill": s.name }, h("td", {}, s.name), h("td", {}, s.local ? "agent's own" : "global"), h("td", {}, s.description), h("td", { class: s.leftOut ? "error" : "" }, s.leftOut ? `left out: ${s.leftOut}` : s.shadowed ? "shadowed by the agent's own" : "available"))))),
      )
    : null;
  page(
    "Workspace",
    h("div", { class: "row" }, h("label", { for: "layer" }, "Layer"), picker, h("span", { class: "muted" }, "Icons: ● override · ▢ from template · ≡ from defaults · ▲ pinned update available")),
    // Only an agent's own files have a workspace history (README: Workspace history).
    kind === "shared" ? h("p", { id: "no-history", class: "muted" }, "This layer keeps no history: saving or deleting replaces the file for every agent that inherits it, and the old content is not kept. Keep your own copy (the folder you seed from).") : null,
    h("div", { class: "cols" }, h("div", {}, tree, h("form", { class: "row", onsubmit: (e) => (e.preventDefault(), newPath.value && openFile({ path: newPath.value.trim(), source: "agent", new: true })) }, h("label", { for: "new-path" }, "New file"), newPath, h("button", { type: "submit", class: "secondary" }, "Create"))), pane),
    pending,
    skills,
    reviewDialog,
  );
  if (open) {
    const f = data.files.find((x) => x.path === open);
    if (f) await openFile(f);
  }
}
