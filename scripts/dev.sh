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

cat <<TXT

  Hearth runs at http://127.0.0.1:$PORT   (GET /health)

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
[ -f .dev.vars ] || echo "  (no .dev.vars yet: the agent will tell you what is missing)"
echo
exec wrangler dev --ip 127.0.0.1 --port "$PORT" --persist-to .wrangler/state --test-scheduled
