//! Decimal text to floats without core's float parser.
//!
//! Why: `str::parse::<f64>` (and `::<f32>`) links core's `dec2flt`: Eisel-Lemire
//! with its table of 128-bit powers of five, and a big-decimal slow path for
//! what that cannot decide. Hearth reads a handful of settings and a
//! `retry-after` header as numbers; integer arithmetic reads them, with the
//! same results (the tests compare against std on many generated inputs).
//! Measured with `npm run size` (docs/notes/floats.md): 1,161.16 -> 1,150.27
//! KiB gzip with the writing half below, which was then taken out.
//!
//! Writing stays with std: `{}` and `{:.N}` of an `f64` are linked anyway, by
//! serde's error text (`serde_core::de::Unexpected::Float`, "floating point
//! `1.5`"), so a writer of our own only added code (~4 kB, measured).

mod read;

pub use read::{read_f32, read_f64};

#[cfg(test)]
mod tests;
