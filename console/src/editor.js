// The code editor, loaded on demand (its own chunk): CodeMirror 6 with
// Markdown. Only the workspace page imports it, when a file is opened.
//
// It lives in a shadow root: there CodeMirror's styles go into a
// constructed style sheet (adoptedStyleSheets) instead of a <style>
// element, which the console's CSP (style-src 'self') would block. Its
// colours are the page's (CSS custom properties pass into a shadow root),
// so it follows the light or dark theme.
import { markdown } from "@codemirror/lang-markdown";
import { EditorView, basicSetup } from "codemirror";

const theme = EditorView.theme({
  "&": { height: "var(--editor-h, 420px)", fontSize: "14px", backgroundColor: "var(--card)", color: "var(--fg)" },
  ".cm-content": { caretColor: "var(--fg)" },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--bg)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine": { backgroundColor: "var(--hover)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--hover)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": { backgroundColor: "var(--select)" },
  ".cm-scroller": { overflow: "auto", fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace" },
});

/** An editor in `parent` holding `text`; `onChange()` after each edit.
 * Returns {get(), set(text), destroy(), focus()}. */
export function createEditor(parent, text, { label = "File content", onChange = () => {} } = {}) {
  const root = parent.shadowRoot ?? parent.attachShadow({ mode: "open" });
  root.replaceChildren();
  const view = new EditorView({
    doc: text,
    root,
    extensions: [
      basicSetup,
      markdown(),
      theme,
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({ "aria-label": label }),
      EditorView.updateListener.of((u) => u.docChanged && onChange()),
    ],
  });
  root.append(view.dom);
  return {
    get: () => view.state.doc.toString(),
    set: (next) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next } }),
    destroy: () => view.destroy(),
    focus: () => view.focus(),
  };
}
