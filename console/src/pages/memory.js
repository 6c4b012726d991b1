// Memory: per store (the owner's `main`, each group's, …) browse (GET
// /memory/notes, newest first, a page at a time), search, read and edit
// notes through POST /memory/call.
import { agentPath, get, post } from "../api.js";
import { fmtTime, h, page, say } from "../dom.js";

export async function memoryPage(state) {
  const agent = state.agent;
  const call = (body) => post(agentPath(agent, "/memory/call"), body);
  const { stores } = await get(agentPath(agent, "/memory/stores"));
  const store = h("select", { id: "store" }, stores.map((s) => h("option", { value: s }, s)));
  const query = h("input", { id: "query", type: "search", placeholder: "words to find" });
  const results = h("ul", { class: "tree", "aria-label": "Notes" });
  const detail = h("section", { class: "card", "aria-label": "Note" }, h("p", { class: "muted" }, "Pick a note, or search; or add one."));
  const stats = h("p", { class: "muted" });

  async function showStats() {
    const s = await call({ call: "stats", store: store.value }).catch(() => null);
    stats.textContent = s?.stats ? `${s.stats.entries} entries: ${s.stats.notes} notes, ${s.stats.archives} archived summaries` : "";
  }
  const PAGE = 50;
  /** The store's entries newest first; "More" appends the next page. */
  async function browse(offset = 0) {
    const r = await get(agentPath(agent, `/memory/notes?store=${encodeURIComponent(store.value)}&offset=${offset}&limit=${PAGE}`));
    const items = r.notes.map((n) => h("li", { "data-note": n.name }, h("button", { type: "button", onclick: () => open(n.name) }, n.name, h("span", { class: "muted" }, ` ${n.summary}${n.length > n.summary.length ? ` (${n.length} chars)` : ""}`))));
    if (offset === 0) results.replaceChildren(...items);
    else results.querySelector("li[data-more]")?.replaceWith(...items);
    const next = offset + r.notes.length;
    if (next < r.total) results.append(h("li", { "data-more": "" }, h("button", { type: "button", class: "secondary", onclick: () => browse(next) }, `More (${r.total - next} older)`)));
    if (!r.total) results.replaceChildren(h("li", { class: "muted" }, "No notes in this store yet."));
  }
  async function search(e) {
    e?.preventDefault();
    if (!query.value.trim()) return browse();
    const r = await call({ call: "search", store: store.value, query: query.value, k: 50 });
    const hits = r.hits ?? [];
    results.replaceChildren(...hits.map((hit) => {
      const entry = hit.entry ?? hit;
      return h("li", {}, h("button", { type: "button", onclick: () => open(entry.name) }, entry.name, h("span", { class: "muted" }, hit.score ? hit.score.toFixed(2) : "")));
    }));
    if (!hits.length) results.replaceChildren(h("li", { class: "muted" }, "No notes found."));
  }
  function editor(name, content, meta) {
    const nameInput = h("input", { id: "note-name", value: name ?? "", readonly: name ? true : undefined });
    const text = h("textarea", { id: "note-content", rows: 12 }, content ?? "");
    const save = async () => {
      const op = name ? { op: "write", name, content: text.value } : { op: "add", name: nameInput.value, content: text.value, kind: "note", created_at: Date.now() };
      await call({ call: "op", store: store.value, op });
      say("Saved");
      name = nameInput.value;
    };
    const remove = async () => {
      if (!confirm(`Delete ${name}?`)) return;
      await call({ call: "op", store: store.value, op: { op: "remove", name } });
      say("Deleted");
      detail.replaceChildren();
      search();
    };
    detail.replaceChildren(
      h("label", { for: "note-name" }, "Name"), nameInput,
      meta ? h("p", { class: "muted" }, meta) : null,
      h("label", { for: "note-content" }, "Content"), text,
      h("div", { class: "row" }, h("button", { type: "button", onclick: save }, "Save"), name ? h("button", { type: "button", class: "danger", onclick: remove }, "Delete") : null),
    );
  }
  async function open(name) {
    const r = await call({ call: "get", store: store.value, name });
    const entry = r.entry;
    if (!entry) return say(`${name} is gone`, { error: true });
    editor(entry.name, entry.content, `${entry.kind} · ${fmtTime(entry.created_at)}${entry.aliases?.length ? ` · also ${entry.aliases.join(", ")}` : ""}`);
  }
  store.addEventListener("change", () => (showStats(), search()));
  page(
    "Memory",
    h("form", { class: "row", onsubmit: search }, h("label", { for: "store" }, "Store"), store, h("label", { for: "query" }, "Search"), query, h("button", { type: "submit" }, "Search"), h("button", { type: "button", class: "secondary", onclick: () => editor(null, "") }, "New note")),
    stats,
    h("div", { class: "cols" }, results, detail),
  );
  await showStats();
  await search();
}
