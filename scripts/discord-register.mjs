#!/usr/bin/env node
// Registers Hearth's slash commands with Discord:
//   npm run discord:register                 # global (all servers and DMs; can take a while to show)
//   npm run discord:register -- --guild ID   # one server, at once (for testing)
// Reads DISCORD_APPLICATION_ID, DISCORD_BOT_TOKEN and DISCORD_API_BASE from the
// environment, else from .dev.vars (per agent: --agent work reads NAME__WORK first).
// PUT replaces the whole command list, so running it again is safe.
import fs from "node:fs";
import path from "node:path";

const COMMANDS = [
  {
    name: "ask",
    description: "Ask your agent",
    type: 1,
    integration_types: [0, 1],
    contexts: [0, 1, 2],
    options: [
      { type: 3, name: "prompt", description: "What to ask", required: true, max_length: 6000 },
      { type: 11, name: "attachment", description: "A file or image to go with it", required: false },
    ],
  },
  { name: "reset", description: "Start a fresh conversation (the old one is archived)", type: 1, integration_types: [0, 1], contexts: [0, 1, 2] },
  { name: "status", description: "Show this conversation's size and token usage", type: 1, integration_types: [0, 1], contexts: [0, 1, 2] },
  { name: "undo", description: "Revert your agent's last change to its workspace files (owner only)", type: 1, integration_types: [0, 1], contexts: [0, 1, 2] },
  { name: "usage", description: "What your agent cost today and this month, and the budget left (owner only)", type: 1, integration_types: [0, 1], contexts: [0, 1, 2] },
  {
    name: "memory",
    description: "Search your agent's memory for this conversation",
    type: 1,
    integration_types: [0, 1],
    contexts: [0, 1, 2],
    options: [{ name: "query", description: "What to look for", type: 3, required: true }],
  },
  // A message command (type 3): in a message's Apps menu, asks about that message.
  { name: "Ask Hearth", type: 3, integration_types: [0, 1], contexts: [0, 1, 2] },
];

function parseArgs(argv) {
  const args = { guild: null, agent: null, envFile: ".dev.vars", dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (!v) throw new Error(`${a.split("=")[0]} needs a value`);
      return v;
    };
    if (a === "--guild" || a.startsWith("--guild=")) args.guild = value();
    else if (a === "--agent" || a.startsWith("--agent=")) args.agent = value();
    else if (a === "--env-file" || a.startsWith("--env-file=")) args.envFile = value();
    else if (a === "--dry-run") args.dryRun = true;
    else if (a === "-h" || a === "--help") args.help = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** KEY=VALUE lines, # comments, optional quotes (the format wrangler reads). */
function parseDevVars(text) {
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    const m = line.match(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)\s*$/);
    if (!m) continue;
    let v = m[2].trim();
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
    out[m[1]] = v;
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.help) {
    console.log("usage: npm run discord:register [-- --guild ID] [--agent NAME] [--env-file PATH] [--dry-run]");
    return;
  }
  let fileVars = {};
  const envPath = path.resolve(args.envFile);
  if (fs.existsSync(envPath)) fileVars = parseDevVars(fs.readFileSync(envPath, "utf8"));
  const suffix = args.agent ? "__" + args.agent.toUpperCase().replaceAll("-", "_") : "";
  const get = (name) => {
    for (const n of suffix ? [name + suffix, name] : [name]) {
      const v = process.env[n] || fileVars[n];
      if (v && v.trim()) return v.trim();
    }
    return undefined;
  };
  const appId = get("DISCORD_APPLICATION_ID");
  const token = get("DISCORD_BOT_TOKEN");
  const base = (get("DISCORD_API_BASE") || "https://discord.com/api/v10").replace(/\/+$/, "");
  const missing = [!appId && "DISCORD_APPLICATION_ID", !token && "DISCORD_BOT_TOKEN"].filter(Boolean);
  if (missing.length) {
    throw new Error(`${missing.join(" and ")} not set (environment or ${args.envFile}; see .dev.vars.example)`);
  }
  const where = args.guild ? `guild ${args.guild}` : "globally";
  const url = `${base}/applications/${appId}${args.guild ? `/guilds/${args.guild}` : ""}/commands`;
  // Slash commands by their /name; the message command by where it shows.
  const label = (c) => (c.type === 3 ? `"${c.name}" (a message's Apps menu)` : "/" + c.name);
  const names = COMMANDS.map(label).join(", ");
  if (args.dryRun) {
    console.log(`would PUT ${COMMANDS.length} commands (${names}) ${where}: ${url}`);
    console.log(JSON.stringify(COMMANDS, null, 2));
    return;
  }
  const res = await fetch(url, {
    method: "PUT",
    headers: {
      authorization: `Bot ${token}`,
      "content-type": "application/json",
      "user-agent": "DiscordBot (https://github.com/hearth, 0.1.0)",
    },
    body: JSON.stringify(COMMANDS),
  });
  const text = await res.text();
  if (!res.ok) {
    let detail = text;
    try {
      const j = JSON.parse(text);
      detail = `${j.message ?? ""}${j.code !== undefined ? ` (code ${j.code})` : ""}${j.errors ? " " + JSON.stringify(j.errors) : ""}`;
    } catch {}
    throw new Error(`Discord answered ${res.status} to PUT ${url}: ${detail}`);
  }
  const registered = JSON.parse(text);
  console.log(`Registered ${registered.length} commands ${where} for application ${appId}:`);
  for (const c of registered) console.log(`  ${label(c)}  (id ${c.id})  ${c.description ?? ""}`);
  if (!args.guild) console.log("Global commands can take a few minutes to appear in Discord clients.");
  console.log("Set the Interactions Endpoint URL in the developer portal to https://<your worker>/discord/<agentId>.");
}

main().catch((e) => {
  console.error(`discord:register failed: ${e.message}`);
  process.exit(1);
});
