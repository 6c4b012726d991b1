#!/usr/bin/env bash
# `npm run dev`: install what is missing, build, seed a starter workspace for
# agent `main` (never overwriting your edits), and run Hearth locally in
# workerd with persistent R2 and Durable Objects under .wrangler/state.
#
# Takes `wrangler dev`'s own flags after `--`: `npm run dev -- --port 9000
# --ip 0.0.0.0` (also `--port=9000`; `PORT=9000` still works, the flag wins),
# `--persist-to DIR` (the starter workspace is seeded there too), and passes
# any other flag to wrangler dev as it is (`--inspector-port`, `--local-protocol`, ...).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
PORT="${PORT:-8787}"
IP="${IP:-127.0.0.1}"
PERSIST=".wrangler/state"
PASS=()
# need_value EXAMPLE FLAG [VALUE...]: FLAG must be followed by a value.
need_value() { [ $# -ge 3 ] && [ -n "$3" ] || { echo "[dev] $2 needs a value (e.g. $2 $1)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --port) need_value 9000 "$@"; PORT="$2"; shift 2 ;;
    --port=*) PORT="${1#*=}"; shift ;;
    --ip) need_value 0.0.0.0 "$@"; IP="$2"; shift 2 ;;
    --ip=*) IP="${1#*=}"; shift ;;
    --persist-to) need_value .wrangler/state "$@"; PERSIST="$2"; shift 2 ;;
    --persist-to=*) PERSIST="${1#*=}"; shift ;;
    *) PASS+=("$1"); shift ;;
  esac
done
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  echo "[dev] --port (or PORT) must be a port number from 1 to 65535, not \"$PORT\"" >&2
  exit 2
fi
[ -n "$IP" ] || { echo "[dev] --ip (or IP) must not be empty" >&2; exit 2; }
# A host for the links below: 0.0.0.0 and :: listen everywhere, 127.0.0.1 reaches them.
case "$IP" in
  0.0.0.0 | "::" | "[::]") HOST=127.0.0.1 ;;
  *:*) HOST="[${IP#[}"; HOST="${HOST%]}]" ;;
  *) HOST="$IP" ;;
esac
bash scripts/setup.sh
bash scripts/build.sh
node scripts/seed.mjs --agent main --dir r2-layout/starter --persist "$PERSIST"
node scripts/seed.mjs --prefix skills/ --dir skills --persist "$PERSIST"

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

  Hearth runs at http://$HOST:$PORT   (GET /health; listening on $IP)
  Web console:  http://$HOST:$PORT/console   (log in with ADMIN_TOKEN from .dev.vars)

  Talk to it now, in a second terminal:   npm run chat$([ "$HOST:$PORT" = "127.0.0.1:8787" ] || printf ' -- --url http://%s:%s' "$HOST" "$PORT")
  (it needs LLM_API_KEY in .dev.vars; the token comes from .dev.vars too)

  Next:
  1. cp .dev.vars.example .dev.vars and fill in LLM_API_KEY, TELEGRAM_BOT_TOKEN,
     TELEGRAM_WEBHOOK_SECRET (then restart npm run dev).
  2. Expose the port through any tunnel, then point your bot at it:
     curl "https://api.telegram.org/bot\$TELEGRAM_BOT_TOKEN/setWebhook" \\
          -d url=https://<your-tunnel>/telegram/main -d secret_token=\$TELEGRAM_WEBHOOK_SECRET
  3. Claim it: the claim code is printed below once Hearth is up (and on the
     console's People page); send /claim CODE to your bot. Or set OWNER_IDS
     (in .dev.vars or wrangler.toml), e.g. OWNER_IDS=telegram:12345.
  4. Edit the workspace: npm run seed -- --agent main --dir <folder> [--force]
TXT
echo
# The claim code, once Hearth answers (only while the agent has no owner).
node scripts/lib/claim-banner.mjs "$HOST" "$PORT" &
exec wrangler dev --ip "$IP" --port "$PORT" --persist-to "$PERSIST" --test-scheduled ${PASS[@]+"${PASS[@]}"}
