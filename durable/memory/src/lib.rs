//! # hearth-memory: the agent's BM25 memory
//!
//! The memory store of seed 002, as a plain Rust crate that knows nothing about
//! Cloudflare: the Agent Durable Object hosts it and implements its one storage port
//! ([`MemoryBackend`]) over SQLite; everything else is tested natively.
//!
//! ## What it is
//!
//! A [`MemoryStore`] holds [`Entry`]s (monotonic id, unique name, aliases, content,
//! [`Kind::Note`] or [`Kind::Archive`], creation time). Names and aliases share one
//! namespace and resolve to the entry. All changes go through [`MemoryStore::apply`] with
//! the closed set of [`Op`]s (Add, Rename, Alias, Write, Remove); failures are
//! [`MemoryError`] values, never panics (a panic would abort the whole WASM instance).
//! [`MemoryStore::search`] ranks entries by BM25 over the tokens of name and content as
//! one field (aliases resolve but add no tokens) and returns the top `k` the caller asks
//! for, with scores; [`MemoryStore::explain`] shows how a score was computed.
//!
//! ## Lucene parity
//!
//! Scores equal Lucene 8's `BM25Similarity` bit for bit (see [`bm25`] and [`norms`]):
//! the `(k1 + 1)`-free formula, `idf = ln(1 + (N - n + 0.5) / (n + 0.5))`, N and avgdl
//! counted over documents that have at least one token, document lengths quantised to
//! Lucene's one-byte norms, Lucene's float/double evaluation order, and a document's term
//! scores summed in double then rounded to float. Equal scores rank the older entry first
//! (Lucene: lower doc id). With the Cranfield README's tokenization
//! ([`Tokenizer::Reference`]) the `cranfield` example reproduces Lucene 8.8.1's
//! nDCG@10, Recall@100 and MAP. Users get [`Tokenizer::Unicode`] (UAX #29 words,
//! Unicode lowercasing, no stop words, no stemming), so German, Spanish or Japanese
//! notes are findable.
//!
//! ## Incremental index
//!
//! [`Bm25Index`] keeps term → postings with per-term document frequencies and per-slot
//! one-byte norms. Add appends one posting per distinct term; Remove marks the document's
//! slot dead and corrects df, N and the length sum from the old text's tokens (re-tokenized,
//! which costs about what the insert did), leaving the postings to be skipped by search and
//! swept in bulk once dead postings reach half the live ones; Write and Rename are remove +
//! add. No operation rebuilds the index.
//!
//! ## Persistence
//!
//! The seed asks for "an atomic snapshot of the file on each successful apply". Rewriting a
//! multi-megabyte snapshot per operation would cost milliseconds of CPU and megabytes of
//! SQLite writes per note, so the snapshot is split into a checkpoint plus a log, as
//! databases do (two tables; see [`backend`]):
//!
//! - each operation writes exactly one log row: the entry's new record (or a tombstone),
//!   keyed by entry id, as one atomic [`ChangeSet`]. Only after the backend commits does the
//!   store touch its RAM state, so a failed commit leaves memory and storage as they were;
//! - every [`MemoryConfig::checkpoint_after`] operations (default 256), or on
//!   [`MemoryStore::checkpoint`], the whole state (entries and the inverted index) is
//!   written as one byte stream cut into ≤ 1 MiB chunks (the Durable Object limit is 2 MB
//!   per value), replacing the old checkpoint and clearing the log in the same change. A
//!   failed checkpoint is harmless: the log still holds everything.
//!
//! [`MemoryStore::open`] reads the checkpoint and the log, and copies nothing out of the
//! checkpoint buffer (kept, shared): it validates every entry record in place (lengths,
//! UTF-8, id order) and keeps an id, a kind and a byte range per entry, decoded into an
//! [`Entry`] the first time something reads it whole; names are hashed into a table that
//! stores no text (`keys.rs`); the index section is term-major with terms sorted by text
//! and length-prefixed, delta-coded posting lists, so the load records where each term's
//! text and postings are and skips over them. A search binary-searches the sorted terms
//! in place and decodes posting lists as it reads them; the hash dictionary the write
//! path wants is built once changes have made about as many binary searches as hashing
//! would cost (a quarter of the terms). No text is re-tokenized, no index is rebuilt, no
//! string is allocated per entry or per term; only entries whose name or content changed
//! since the checkpoint (at most `checkpoint_after` of them) are re-indexed, through the
//! same incremental path as a write. A checkpoint made with another tokenizer is
//! detected and the index rebuilt from the text once; version 1 checkpoints (terms in
//! any order) still load, hashing their terms at once.
//!
//! This crate is built with `opt-level = "s"` inside the otherwise `"z"` Worker (a
//! per-package profile in the root `Cargo.toml`: +10 kB of WASM, loads 1.45× faster
//! than at `"z"`; `3` would be 1.7× for +24 kB).
//! Measured at 10,000 notes of 100 tokens on a shared 2-core machine (`npm run bench`:
//! `bench/memory/memory_bench.rs` natively, `bench/memory/wasm-bench/` in node's V8 with the Worker's
//! profile):
//!
//! | | native | V8 (WASM) |
//! |---|---|---|
//! | cold load after a checkpoint (median) | 4.3 ms | 6.0 ms (was 24.6 ms) |
//! | first search / first add after it | 0.15 / 0.13 ms | 0.39 / 0.45 ms |
//! | add / write / remove (mean) | 12 / 23 / 9 µs | 28 / 38 / 16 µs |
//! | checkpoint (whole store, 8.6 MB) | 40 ms | |
//!
//! A cold load with a full log of 256 rewritten notes takes about 12 ms natively (each
//! is re-indexed); the Agent object checkpoints after 32 rows from its alarm.
//!
//! ## Limits
//!
//! - Everything lives in RAM (about 2-3× the text size); fine for tens of thousands of
//!   notes in a 128 MB isolate, not for millions.
//! - Names are trimmed and must be non-empty, ≤ 256 bytes, without control characters;
//!   content ≤ 256 KiB; ≤ 32 aliases per entry (see [`Limits`]).
//! - No stemming, no phrase or boolean queries, no NFC normalisation (a decomposed "ü"
//!   does not match a composed one), no fuzzy matching; ideographic text matches per
//!   character, as Lucene's `StandardTokenizer` does.
//! - A checkpoint costs O(store size) once every `checkpoint_after` operations; a host
//!   that wants every request cheap sets it to `None` and checkpoints from an alarm.
//! - Entry ids are `u64` but a JavaScript host should keep them below 2^53.
//! - A cold load still reads the whole checkpoint: two copies of it (out of storage, then
//!   the chunks joined: a third of the load), UTF-8 validation of all text (a fifth),
//!   and one small record per entry, slot and term. Going further means records that
//!   never straddle chunks (no join) or skipping validation.
//! - Posting lists are decoded as they are read, after the load, so a corrupt list
//!   cannot be reported as an error: it ends at the first malformed posting (no panic).

pub mod backend;
pub mod bm25;
mod codec;
mod config;
pub mod conversation;
mod entry;
mod entry_record;
mod entry_table;
mod error;
pub mod evidence;
mod index;
mod keys;
pub mod norms;
mod ops;
mod postings;
pub mod promote;
pub(crate) mod snapshot;
mod store;
pub mod tokenize;

pub use backend::{BackendError, ChangeSet, InMemoryBackend, LogRow, MemoryBackend, Persisted};
pub use bm25::{Bm25Params, Explanation, DEFAULT_B, DEFAULT_K1};
pub use codec::CorruptData;
pub use config::{Limits, MemoryConfig, DEFAULT_CHECKPOINT_AFTER, MAX_CONTENT_BYTES_CEILING};
pub use conversation::{ConversationError, ConversationHit, ConversationIndex, ConversationQuery, TurnDoc};
pub use entry::{Entry, EntryId, Kind, SearchHit};
pub use error::MemoryError;
pub use index::{Bm25Index, DocId};
pub use ops::Op;
pub use snapshot::SNAPSHOT_CHUNK_BYTES;
pub use store::{MemoryStats, MemoryStore};
pub use tokenize::Tokenizer;
