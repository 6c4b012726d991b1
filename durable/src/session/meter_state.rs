//! What a session's meter keeps between calls, in the object's memory
//! (SQLite holds what must survive an eviction). Apart from the meter's
//! work ([`super::meter`]) so that what a session needs ([`super::deps`])
//! can hold it without depending on that work.

use crate::protocol::usage::CallRecord;
use crate::usage::{cache, prices};
use r2_layout::Usage;

/// Calls waiting for the ledger, reservations, and this turn's figures.
#[derive(Debug, Default)]
pub struct MeterState {
    /// Calls not yet in the ledger, once read from SQLite.
    pub(super) pending: Vec<CallRecord>,
    pub(super) loaded: bool,
    /// Reservations to release with the next request, and since when.
    pub(super) release: Vec<u64>,
    pub(super) release_since: Option<i64>,
    /// The reservation of the call in flight, and whether its limit is near.
    pub(super) open: Option<u64>,
    pub(super) tight: bool,
    /// No settlement before this (the last one failed).
    pub(super) not_before: i64,
    /// This turn so far, for the footer.
    pub(super) turn: Usage,
    pub(super) turn_cost: Option<f64>,
    pub(super) turn_unpriced: bool,
    pub(super) turn_model: String,
    pub(super) last_call: Option<cache::Shape>,
    pub(super) prices: Option<prices::PriceBook>,
    pub(super) blocked: Option<bool>,
}
