// Markdown as the model writes it, rendered safely: marked (GFM) turns it
// into HTML, DOMPurify keeps only the tags below, and nothing else reaches
// the page. Two locks: raw HTML in the text is shown as text (marked's
// html tokens are escaped), and the sanitizer drops whatever slips through
// (scripts, event handlers, styles, javascript: links, images from
// elsewhere). Code blocks get their language and a Copy button; tables
// scroll inside their bubble; links open in a new tab.
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { h } from "./dom.js";

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML in the model's text is text.
    html: ({ text }) => escapeHtml(text),
    // An image would be fetched from anywhere (and the CSP refuses it): a link instead.
    image: ({ href, text }) => `<a href="${escapeHtml(href ?? "")}">${escapeHtml(text || href || "image")}</a>`,
  },
});

const ALLOWED_TAGS = ["a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "input", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul"];
const ALLOWED_ATTR = ["href", "title", "class", "start", "type", "checked", "disabled", "align"];
const SAFE_URL = /^(https?:|mailto:|#)/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") ?? "";
    if (!SAFE_URL.test(href.trim())) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  // Only GFM's task-list boxes, read-only.
  if (node.tagName === "INPUT" && node.getAttribute("type") !== "checkbox") node.remove();
  if (node.tagName === "INPUT") node.setAttribute("disabled", "");
  if (node.hasAttribute?.("class") && !/^language-[\w+#.-]+$/.test(node.getAttribute("class"))) node.removeAttribute("class");
});

/** Copies `text`; says whether it worked. */
async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "sr-only", "aria-hidden": "true" }, text);
    document.body.append(area);
    area.select();
    const ok = document.execCommand?.("copy") ?? false;
    area.remove();
    return ok;
  }
}

/** A code block: its language, a Copy button, the code scrolling sideways. */
function dressCode(pre) {
  const code = pre.querySelector("code");
  const lang = (code?.className.match(/language-([\w+#.-]+)/) ?? [])[1] ?? "";
  const button = h("button", { type: "button", class: "copy secondary small" }, "Copy");
  button.addEventListener("click", async () => {
    const ok = await copy((code?.textContent ?? pre.textContent).replace(/\n$/, ""));
    button.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => (button.textContent = "Copy"), 1500);
  });
  pre.setAttribute("tabindex", "0");
  if (lang) pre.setAttribute("aria-label", `${lang} code`);
  const figure = h("div", { class: "code", "data-lang": lang || "text" }, h("div", { class: "code-head" }, h("span", { class: "lang" }, lang || "text"), button));
  pre.replaceWith(figure);
  figure.append(pre);
}

/** `text` (markdown) as safe DOM nodes. */
export function renderMarkdown(text) {
  const html = marked.parse(text ?? "", { async: false });
  const fragment = DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true });
  for (const pre of fragment.querySelectorAll("pre")) dressCode(pre);
  for (const table of fragment.querySelectorAll("table")) {
    const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Table" });
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return fragment;
}

/** Fills `el` with `text` rendered, at most once a frame while text streams in. */
export function markdownInto(el) {
  let pending = null;
  let frame = 0;
  const draw = () => {
    frame = 0;
    el.replaceChildren(renderMarkdown(pending));
  };
  return {
    set(text, { now = false } = {}) {
      pending = text;
      if (now) {
        if (frame) cancelAnimationFrame(frame);
        draw();
      } else if (!frame) frame = requestAnimationFrame(draw);
    },
  };
}
