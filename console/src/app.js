// The console's shell: login, the agent picker, the page router
// (#/page/arg), the menu on narrow screens, the theme.
import { get, request } from "./api.js";
import { h, leaving, loading, page, say } from "./dom.js";
import { chatPage } from "./pages/chat.js";

// Chat is in the first load; the other pages are fetched when first opened
// (a few KiB each; the editor is a chunk of its own, loaded with a file).
const PAGES = {
  chat: async () => chatPage,
  workspace: async () => (await import("./pages/workspace.js")).workspacePage,
  sessions: async () => (await import("./pages/sessions.js")).sessionsPage,
  memory: async () => (await import("./pages/memory.js")).memoryPage,
  usage: async () => (await import("./pages/usage.js")).usagePage,
  schedule: async () => (await import("./pages/schedule.js")).schedulePage,
  people: async () => (await import("./pages/people.js")).peoplePage,
  tasks: async () => (await import("./pages/tasks.js")).tasksPage,
};

export const state = { agents: [], agent: null };

const top = document.querySelector(".top");
const menuButton = document.getElementById("menu");
const themeButton = document.getElementById("theme");

// The menu (page links, agent, logout) folds away on narrow screens.
function openMenu(open) {
  top.classList.toggle("open", open);
  menuButton.setAttribute("aria-expanded", String(open));
}
menuButton.addEventListener("click", () => openMenu(!top.classList.contains("open")));
document.querySelector(".top nav").addEventListener("click", (e) => e.target.closest("a") && openMenu(false));

// Dark or light: the system's choice until the button sets one (kept in localStorage).
const systemDark = matchMedia("(prefers-color-scheme: dark)");
function applyTheme() {
  const chosen = localStorage.getItem("hearth-theme");
  if (chosen) document.documentElement.dataset.theme = chosen;
  else delete document.documentElement.dataset.theme;
  const dark = chosen ? chosen === "dark" : systemDark.matches;
  themeButton.setAttribute("aria-pressed", String(dark));
  themeButton.textContent = dark ? "Light mode" : "Dark mode";
}
themeButton.addEventListener("click", () => {
  const dark = themeButton.getAttribute("aria-pressed") === "true";
  localStorage.setItem("hearth-theme", dark ? "light" : "dark");
  applyTheme();
});
systemDark.addEventListener("change", applyTheme);
applyTheme();

function showLogin(message) {
  top.hidden = true;
  const error = h("p", { class: "error", id: "login-error", role: "alert" }, message ?? "");
  const input = h("input", { id: "token", type: "password", name: "token", autocomplete: "current-password", required: true });
  const button = h("button", { type: "submit" }, "Log in");
  const form = h(
    "form",
    { class: "card login", "aria-describedby": "login-help" },
    h("p", { id: "login-help" }, "Log in with the Worker's ADMIN_TOKEN. The console keeps a signed session cookie, never the token."),
    h("label", { for: "token" }, "Admin token"),
    input,
    h("div", { class: "row" }, button),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    button.disabled = true;
    form.setAttribute("aria-busy", "true");
    try {
      await request("POST", "/console/login", { json: { token: input.value } });
      input.value = "";
      await start();
    } catch (err) {
      error.textContent = err.message;
    } finally {
      button.disabled = false;
      form.removeAttribute("aria-busy");
    }
  });
  page("Log in", form);
  input.focus();
}

/** The page and its arguments from the hash: `#/chat/t-1` → ["chat", ["t-1"]]. */
export function currentRoute() {
  const [name, ...args] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  return [PAGES[(name || "chat").toLowerCase()] ? (name || "chat").toLowerCase() : "chat", args];
}

// One page is drawn at a time: a hash change while a page is still loading
// waits for it, then draws the latest hash (a slow page that finished late
// would otherwise draw itself over the page the user went to).
let drawing = null;
let drawAgain = false;

async function route() {
  if (drawing) {
    drawAgain = true;
    return drawing;
  }
  drawing = (async () => {
    try {
      do {
        drawAgain = false;
        await drawPage();
      } while (drawAgain);
    } finally {
      drawing = null;
    }
  })();
  return drawing;
}

let shown = null;

async function drawPage() {
  const [name, args] = currentRoute();
  for (const a of document.querySelectorAll(".top nav a")) {
    if (a.getAttribute("href") === `#/${name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  delete document.body.dataset.ready;
  document.body.dataset.page = name;
  leaving.guard = null;
  const main = document.getElementById("main");
  // Another page: the old one goes at once, and the new one says it is loading.
  if (shown !== name) {
    main.replaceChildren(h("h1", {}, name[0].toUpperCase() + name.slice(1)), loading());
  }
  main.setAttribute("aria-busy", "true");
  shown = name;
  try {
    const render = await PAGES[name]();
    await render(state, ...args);
  } catch (err) {
    if (err.status === 401) return;
    page(name[0].toUpperCase() + name.slice(1), h("p", { class: "error", role: "alert" }, err.message));
  } finally {
    main.removeAttribute("aria-busy");
  }
  if (drawAgain) return;
  if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
  // The page is drawn and has the focus (tests wait for this).
  document.body.dataset.ready = name;
}

async function start() {
  let agents;
  try {
    agents = await get("/api/agents");
  } catch (err) {
    if (err.status === 401 || err.status === 503) return showLogin(err.status === 503 ? err.message : "");
    return showLogin(err.message);
  }
  state.agents = agents;
  const saved = sessionStorage.getItem("hearth-agent");
  state.agent = agents.includes(saved) ? saved : agents[0];
  const select = document.getElementById("agent");
  select.replaceChildren(...agents.map((a) => h("option", { value: a, selected: a === state.agent }, a)));
  top.hidden = false;
  shown = null;
  await route();
}

// Leaving a page with unsaved edits asks first (another page, another agent, a reload).
let lastHash = location.hash;
// "Skip to content" moves the focus and stays on the page: followed as a
// link, "#main" would reach the hash router as a route and draw the chat
// page again (on any page, dropping what was typed).
document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  document.getElementById("main").focus();
});

window.addEventListener("hashchange", () => {
  if (leaving.guard && !leaving.guard()) {
    history.replaceState(null, "", lastHash);
    return;
  }
  lastHash = location.hash;
  if (state.agents.length) route();
});
window.addEventListener("beforeunload", (e) => {
  if (leaving.guard?.(true) === false) e.preventDefault();
});
window.addEventListener("hearth:logged-out", () => {
  state.agents = [];
  showLogin("Your session ended: log in again.");
});
document.getElementById("agent").addEventListener("change", (e) => {
  if (leaving.guard && !leaving.guard()) {
    e.target.value = state.agent;
    return;
  }
  state.agent = e.target.value;
  sessionStorage.setItem("hearth-agent", state.agent);
  openMenu(false);
  shown = null;
  route();
});
document.getElementById("logout").addEventListener("click", async () => {
  try {
    await request("POST", "/console/logout");
  } finally {
    state.agents = [];
    leaving.guard = null;
    showLogin("Logged out.");
    say("Logged out");
  }
});
start();
