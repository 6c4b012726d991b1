// The console's shell: login, the agent picker, the page router (#/page).
import { get, request } from "./api.js";
import { h, page, say } from "./dom.js";
import { chatPage } from "./pages/chat.js";
import { memoryPage } from "./pages/memory.js";
import { schedulePage } from "./pages/schedule.js";
import { sessionsPage } from "./pages/sessions.js";
import { usagePage } from "./pages/usage.js";
import { workspacePage } from "./pages/workspace.js";

const PAGES = {
  chat: chatPage,
  workspace: workspacePage,
  sessions: sessionsPage,
  memory: memoryPage,
  usage: usagePage,
  schedule: schedulePage,
};

export const state = { agents: [], agent: null };

function showLogin(message) {
  document.querySelector(".top").hidden = true;
  const error = h("p", { class: "error", id: "login-error", role: "alert" }, message ?? "");
  const input = h("input", { id: "token", type: "password", name: "token", autocomplete: "current-password", required: true });
  const form = h(
    "form",
    { class: "card login", "aria-describedby": "login-help" },
    h("p", { id: "login-help" }, "Log in with the Worker's ADMIN_TOKEN. The console keeps a signed session cookie, never the token."),
    h("label", { for: "token" }, "Admin token"),
    input,
    h("div", { class: "row" }, h("button", { type: "submit" }, "Log in")),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await request("POST", "/console/login", { json: { token: input.value } });
      input.value = "";
      await start();
    } catch (err) {
      error.textContent = err.message;
    }
  });
  page("Log in", form);
  input.focus();
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

async function drawPage() {
  const name = (location.hash.replace(/^#\/?/, "").split("/")[0] || "chat").toLowerCase();
  const render = PAGES[name] ?? PAGES.chat;
  for (const a of document.querySelectorAll(".top nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === `#/${name}`);
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  delete document.body.dataset.ready;
  try {
    await render(state);
  } catch (err) {
    if (err.status === 401) return;
    page(name, h("p", { class: "error", role: "alert" }, err.message));
  }
  if (drawAgain) return;
  document.getElementById("main").focus({ preventScroll: true });
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
  document.querySelector(".top").hidden = false;
  await route();
}

window.addEventListener("hashchange", () => state.agents.length && route());
window.addEventListener("hearth:logged-out", () => showLogin("Your session ended: log in again."));
document.getElementById("agent").addEventListener("change", (e) => {
  state.agent = e.target.value;
  sessionStorage.setItem("hearth-agent", state.agent);
  route();
});
document.getElementById("logout").addEventListener("click", async () => {
  try {
    await request("POST", "/console/logout");
  } finally {
    state.agents = [];
    showLogin("Logged out.");
    say("Logged out");
  }
});
start();
