//! Archives written before conversation memory existed (or whose indexing failed at
//! their reset): found in R2 and indexed once, in the background.
//!
//! The Agent object's alarm calls [`run`] after its ticks. Each run lists the agent's
//! `sessions/` prefix (one R2 list per 1,000 archives), skips every archive already
//! added (its key is the batch's source, so a reset that indexed its own archive is
//! skipped too) and indexes at most [`ARCHIVES_PER_RUN`] archives or
//! [`EXCHANGES_PER_RUN`] exchanges, so one alarm stays short; [`BackfillReport::more`]
//! asks for another run soon. An archive is added with its source mark in one write,
//! so a run cut short (an eviction, a deploy) loses nothing and adds nothing twice.
//! When nothing is left, runs stop listing for [`IDLE_MS`] (a day): new archives are
//! indexed by their reset, and the daily look catches one whose indexing failed.
//!
//! Not indexed (marked done under the store [`SKIPPED_STORE`], with a log line):
//! heartbeat and job sessions (their text is a fixed prompt), archives without a
//! readable session key, and archives that cannot be read (bad gzip or JSON).

use super::exchanges::exchanges;
use crate::ports::{LogLevel, ObjectStore, Sql, SqlValue, StorageError};
use crate::protocol::memory::{store_for, ConversationSource, Exchange, MemoryCallError};
use crate::storage::list_all;
use r2_layout::{archive, keys, AgentId};

/// Archives indexed by one run at most...
pub const ARCHIVES_PER_RUN: usize = 8;
/// ...and exchanges (the run stops after the archive that crosses it).
pub const EXCHANGES_PER_RUN: usize = 2_000;
/// After a run found nothing left, no listing for this long.
pub const IDLE_MS: i64 = 86_400_000;
/// Largest archive read (uncompressed), as `session_logs` reads them.
pub const MAX_ARCHIVE_BYTES: usize = 8 * 1024 * 1024;
/// The store name under which skipped archives are marked done (no session maps to it).
pub const SKIPPED_STORE: &str = "-";

const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS conv_backfill (agent TEXT PRIMARY KEY, idle_until INTEGER NOT NULL, archives INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "conv_backfill", statements: &[SCHEMA] };

/// Where a run adds what it reads (the Agent object's memory).
pub trait Indexer {
    fn add(&mut self, store: &str, from: &ConversationSource, exchanges: &[Exchange])
        -> Result<usize, MemoryCallError>;
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// The run did not list: the last one found nothing left less than a day ago.
    pub idle: bool,
    pub archives: usize,
    pub exchanges: usize,
    pub skipped: usize,
    /// Archives remain: run again soon.
    pub more: bool,
}

fn skip<S: Sql + ?Sized>(sql: &S, key: &str, now: i64) -> Result<(), StorageError> {
    sql.exec(
        "INSERT OR IGNORE INTO conv_source (store, source, added) VALUES (?, ?, ?)",
        &[SKIPPED_STORE.into(), key.into(), SqlValue::Int(now)],
    )
    .map(|_| ())
}

fn meta<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// One run for `agent` (see the module docs). The conversation schema exists.
pub async fn run<O: ObjectStore, S: Sql + ?Sized>(
    r2: &O,
    sql: &S,
    agent: &AgentId,
    now: i64,
    indexer: &mut dyn Indexer,
    log: &dyn Fn(LogLevel, &str),
) -> Result<BackfillReport, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let state = sql.exec("SELECT idle_until FROM conv_backfill WHERE agent = ?", &[agent.as_str().into()])?;
    if state.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).is_some_and(|until| now < until) {
        return Ok(BackfillReport { idle: true, ..Default::default() });
    }
    crate::storage::ensure(sql, &super::store::TABLES)?;
    let prefix = keys::sessions_prefix(agent);
    let (objects, _) = list_all(r2, &prefix, None).await?;
    // Every source already added, in one read (an agent may have thousands of archives).
    let upper = format!("{prefix}\u{10ffff}");
    let done: std::collections::HashSet<String> = sql
        .exec(
            "SELECT source FROM conv_source WHERE source >= ? AND source < ?",
            &[prefix.as_str().into(), upper.as_str().into()],
        )?
        .into_iter()
        .filter_map(|r| r.into_iter().next().and_then(SqlValue::into_string))
        .collect();
    let mut report = BackfillReport::default();
    let unavailable = |e: MemoryCallError| StorageError(e.to_string());
    for object in objects {
        let Some(name) = object.key.strip_prefix(&prefix) else { continue };
        if name.contains('/') || !name.ends_with(".jsonl.gz") || done.contains(&object.key) {
            continue;
        }
        if report.archives + report.skipped >= ARCHIVES_PER_RUN || report.exchanges >= EXCHANGES_PER_RUN {
            report.more = true;
            break;
        }
        // A failed read stops the run (R2 may be out): the next one takes it again.
        let Some(got) = r2.get(&object.key).await? else { continue };
        let key = meta(&got.custom_metadata, "sessionKey").and_then(crate::inbound::SessionKey::parse);
        let Some(session_key) = key.filter(super::is_indexed) else {
            log(LogLevel::Info, &format!("conversation backfill: {} left out (no conversation session)", object.key));
            skip(sql, &object.key, now)?;
            report.skipped += 1;
            continue;
        };
        let messages = match r2.gunzip(&got.body, MAX_ARCHIVE_BYTES).await {
            Ok(lines) => archive::decode_lines(&lines).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let messages = match messages {
            Ok(m) => m,
            Err(e) => {
                log(LogLevel::Warn, &format!("conversation backfill: {} cannot be read ({e}); left out", object.key));
                skip(sql, &object.key, now)?;
                report.skipped += 1;
                continue;
            }
        };
        let file_id = name.trim_end_matches(".jsonl.gz");
        let session_id = meta(&got.custom_metadata, "sessionId")
            .map(str::to_owned)
            .unwrap_or_else(|| file_id.split("-part").next().unwrap_or(file_id).to_owned());
        let from = super::source_of(&session_key, &session_id, &object.key);
        let (found, left_out) = super::exchanges::within_batch(exchanges(&messages));
        if left_out > 0 {
            log(
                LogLevel::Warn,
                &format!("conversation backfill: {}: {left_out} exchanges over the batch's size left out", object.key),
            );
        }
        let added = indexer.add(&store_for(&session_key), &from, &found).map_err(unavailable)?;
        report.archives += 1;
        report.exchanges += added;
    }
    let idle_until = if report.more { 0 } else { now + IDLE_MS };
    sql.exec(
        "INSERT INTO conv_backfill (agent, idle_until, archives) VALUES (?, ?, ?) \
         ON CONFLICT(agent) DO UPDATE SET idle_until = excluded.idle_until, archives = archives + excluded.archives",
        &[agent.as_str().into(), SqlValue::Int(idle_until), SqlValue::Int(report.archives as i64)],
    )?;
    Ok(report)
}
