//! Decimal text of floats without core's float parser and printer.
//!
//! Why: `str::parse::<f64>` links core's `dec2flt` (Eisel-Lemire with its table
//! of 128-bit powers of five, and a big-decimal slow path), and `{}` / `{:.N}`
//! of a float link `flt2dec` (Grisu with its cached powers, Dragon4 as its
//! fallback, both shortest and exact modes). Hearth reads a handful of settings
//! and a `retry-after` header as numbers and prints money, scores and sizes with
//! a fixed number of decimals: integer arithmetic does both, with the same
//! results (the tests compare against std on many generated inputs).
//!
//! - [`read_f64`] / [`read_f32`]: what `str::parse` accepts, with the same value,
//!   for every number of a size a setting can mean (see [`read_f64`]).
//! - [`Fixed`]: `{:.N}` of an `f64` (or an `f32` widened), byte for byte.
//! - [`Shortest`]: `{}` of an `f64`, byte for byte, from the digits of
//!   serde_json's own float writer (zmij, linked anyway).

mod read;
mod write;

pub use read::{read_f32, read_f64};
pub use write::{Fixed, Shortest};

#[cfg(test)]
mod tests;
