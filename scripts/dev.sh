#!/usr/bin/env bash
# `npm run dev`: install what is missing, build, seed a starter workspace for
# agent `main` (never overwriting your edits), and run Hearth locally in
# workerd with persistent R2 and Durable Objects under .wrangler/state.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
PORT="${PORT:-8787}"
bash scripts/setup.sh
bash scripts/build.sh
node scripts/seed.mjs --agent main --dir r2-layout/starter --persist .wrangler/state
node scripts/seed.mjs --prefix skills/ --dir skills --persist .wrangler/state

# The API (and npm run chat) needs a token: a local .dev.vars gets a random
# ADMIN_TOKEN when it has none (a copy of .dev.vars.example when it is missing).
if [ ! -f .dev.vars ]; then
  cp .dev.vars.example .dev.vars
  echo "[dev] created .dev.vars from .dev.vars.example"
fi
if ! grep -Eq '^ADMIN_TOKEN=.+' .dev.vars; then
  token=$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')
  if grep -Eq '^ADMIN_TOKEN=' .dev.vars; then
    sed -i.bak "s/^ADMIN_TOKEN=.*/ADMIN_TOKEN=$token/" .dev.vars && rm -f .dev.vars.bak
  else
    printf '\nADMIN_TOKEN=%s\n' "$token" >> .dev.vars
  fi
  echo "[dev] set a random ADMIN_TOKEN in .dev.vars (the bearer token of /api/..., read by npm run chat)"
fi

cat <<TXT

  Hearth runs at http://127.0.0.1:$PORT   (GET /health)
  Web console:  http://localhost:$PORT/console   (log in with ADMIN_TOKEN from .dev.vars)

  Talk to it now, in a second terminal:   npm run chat
  (it needs LLM_API_KEY in .dev.vars; the token comes from .dev.vars too)

  Next:
  1. cp .dev.vars.example .dev.vars and fill in LLM_API_KEY, TELEGRAM_BOT_TOKEN,
     TELEGRAM_WEBHOOK_SECRET (then restart npm run dev).
  2. Expose the port through any tunnel, then point your bot at it:
     curl "https://api.telegram.org/bot\$TELEGRAM_BOT_TOKEN/setWebhook" \\
          -d url=https://<your-tunnel>/telegram/main -d secret_token=\$TELEGRAM_WEBHOOK_SECRET
  3. Message your bot: it answers strangers with the id to put in OWNER_IDS
     (in .dev.vars or wrangler.toml), e.g. OWNER_IDS=telegram:12345.
  4. Edit the workspace: npm run seed -- --agent main --dir <folder> [--force]
TXT
echo
exec wrangler dev --ip 127.0.0.1 --port "$PORT" --persist-to .wrangler/state --test-scheduled
