//! What a model's tokens cost: a built-in table of current Anthropic and
//! OpenAI prices, replaced or extended per deployment by `LLM_PRICES`
//! ([`crate::settings::usage::parse_prices`]).
//!
//! Prices are USD per million tokens: input (neither read from nor written
//! to the prompt cache), output, cache read, cache write (5 minutes), cache
//! write for an hour (Anthropic: twice the input price, for every model). A
//! call's usage is already split that way ([`r2_layout::Usage`]: `input`
//! excludes cached tokens for both providers, `cache_write_1h` is the part of
//! `cache_write` written for an hour), so its cost is one sum. A model the
//! table does not know has no price: its tokens are kept, its cost is `None`.
//!
//! Names are compared after [`normalize`]: case, a `vendor/` or
//! `anthropic.` prefix, a date or `-latest` suffix, Bedrock's `-v1:0` and
//! `.` versus `-` in versions do not matter, so `claude-sonnet-4-5-20250929`,
//! `anthropic/claude-sonnet-4.5` and `claude-sonnet-4-5` are one model.

use crate::settings::usage::{ModelPrice, WRITE_1H_PER_INPUT};
use r2_layout::Usage;

/// An Anthropic model: its 1-hour cache writes at twice the input price.
const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> ModelPrice {
    ModelPrice { input, output, cache_read, cache_write, cache_write_1h: input * WRITE_1H_PER_INPUT }
}

/// OpenAI bills no cache writes (and has no 1-hour cache): a written token
/// costs what any input token does.
const fn openai(input: f64, output: f64, cache_read: f64) -> ModelPrice {
    ModelPrice { input, output, cache_read, cache_write: input, cache_write_1h: input }
}

/// The built-in prices, USD per million tokens (input, output, cache read,
/// cache write), looked up on 2026-11-24.
///
/// Anthropic: <https://platform.claude.com/docs/en/about-claude/pricing>
/// ("Model pricing": base input, 5-minute cache writes, cache hits, output)
/// and the model pages (<https://platform.claude.com/docs/en/models/sonnet-5-5/overview>,
/// `.../sonnet-5/overview`, `.../haiku-5-5/overview`). Sonnet 5.5's cache
/// reads were cut from $0.20 to $0.10 on 2026-10-07. Opus 5.5's cache rates
/// are its listed multipliers (reads 0.05×, writes 1.25× of $4). Haiku 5.5
/// costs five times as much for a prompt over 100,000 tokens; the table has
/// the lower band, so such calls are under-priced (set `LLM_PRICES` if you
/// run long prompts on it).
///
/// OpenAI: <https://developers.openai.com/api/docs/pricing> (standard tier,
/// short context), as listed on 2026-06-04 and re-read through
/// <https://tokenmix.ai/blog/openai-api-cost-2026-gpt-5-5-5-4-nano-batch> and
/// <https://www.morphllm.com/openai-api-pricing>; the older models (GPT-5,
/// GPT-4.1, GPT-4o, o3, o4-mini) at their long-standing list prices from the
/// same page. OpenAI charges nothing extra for cache writes; the `-pro`
/// models have no cached rate.
pub const BUILT_IN: &[(&str, ModelPrice)] = &[
    // Anthropic
    ("claude-fable-5-1", p(10.0, 50.0, 0.25, 12.5)),
    ("claude-mythos-5-1", p(10.0, 50.0, 0.25, 12.5)),
    ("claude-fable-5", p(10.0, 50.0, 1.0, 12.5)),
    ("claude-mythos-5", p(10.0, 50.0, 1.0, 12.5)),
    ("claude-opus-5-5", p(4.0, 20.0, 0.2, 5.0)),
    ("claude-opus-5", p(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-8", p(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-7", p(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-6", p(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-5", p(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-1", p(15.0, 75.0, 1.5, 18.75)),
    ("claude-opus-4-0", p(15.0, 75.0, 1.5, 18.75)),
    ("claude-opus-4", p(15.0, 75.0, 1.5, 18.75)),
    ("claude-sonnet-5-5", p(2.0, 10.0, 0.1, 2.5)),
    ("claude-sonnet-5", p(2.0, 10.0, 0.2, 2.5)),
    ("claude-sonnet-4-6", p(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4-5", p(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4-0", p(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4", p(3.0, 15.0, 0.3, 3.75)),
    ("claude-3-7-sonnet", p(3.0, 15.0, 0.3, 3.75)),
    ("claude-haiku-5-5", p(0.1, 0.5, 0.01, 0.125)),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.1, 1.25)),
    ("claude-3-5-haiku", p(0.8, 4.0, 0.08, 1.0)),
    ("claude-3-haiku", p(0.25, 1.25, 0.03, 0.3)),
    // OpenAI
    ("gpt-5.5", openai(5.0, 30.0, 0.5)),
    ("gpt-5.5-pro", openai(30.0, 180.0, 30.0)),
    ("gpt-5.4", openai(2.5, 15.0, 0.25)),
    ("gpt-5.4-mini", openai(0.75, 4.5, 0.075)),
    ("gpt-5.4-nano", openai(0.2, 1.25, 0.02)),
    ("gpt-5.4-pro", openai(30.0, 180.0, 30.0)),
    ("gpt-5", openai(1.25, 10.0, 0.125)),
    ("gpt-5-mini", openai(0.25, 2.0, 0.025)),
    ("gpt-5-nano", openai(0.05, 0.4, 0.005)),
    ("gpt-4.1", openai(2.0, 8.0, 0.5)),
    ("gpt-4.1-mini", openai(0.4, 1.6, 0.1)),
    ("gpt-4.1-nano", openai(0.1, 0.4, 0.025)),
    ("gpt-4o", openai(2.5, 10.0, 1.25)),
    ("gpt-4o-mini", openai(0.15, 0.6, 0.075)),
    ("o3", openai(2.0, 8.0, 0.5)),
    ("o4-mini", openai(1.1, 4.4, 0.275)),
    // Speech (voice replies, kind `tts`): priced per million characters,
    // which the ledger records as input.
    ("tts-1", openai(15.0, 0.0, 15.0)),
    ("tts-1-hd", openai(30.0, 0.0, 30.0)),
];

/// A model name in the form the table compares: lowercase, without a
/// `vendor/` or `anthropic.` prefix, a `[1m]`, `-latest`, Bedrock `-v1:0` or
/// date suffix (`-20250929`, `-2024-07-18`), with `.` in versions as `-`.
pub fn normalize(model: &str) -> String {
    let mut m = model.trim().to_ascii_lowercase();
    if let Some(i) = m.rfind('/') {
        m = m[i + 1..].to_owned();
    }
    if let Some(rest) = m.strip_prefix("anthropic.") {
        m = rest.to_owned();
    }
    if let Some(rest) = m.strip_suffix("[1m]") {
        m = rest.to_owned();
    }
    // Bedrock's `-v1:0`, `-v2`.
    if let Some(i) = m.rfind("-v") {
        let tail = &m[i + 2..];
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit() || c == ':') {
            m.truncate(i);
        }
    }
    if let Some(rest) = m.strip_suffix("-latest") {
        m = rest.to_owned();
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // `-YYYY-MM-DD` (OpenAI), then `-YYYYMMDD` (Anthropic).
    let parts: Vec<&str> = m.split('-').collect();
    let n = parts.len();
    if n > 3 && parts[n - 3].len() == 4 && digits(parts[n - 3]) && digits(parts[n - 2]) && digits(parts[n - 1]) {
        m = parts[..n - 3].join("-");
    } else if n > 1 && parts[n - 1].len() == 8 && digits(parts[n - 1]) {
        m = parts[..n - 1].join("-");
    }
    m.replace('.', "-")
}

/// The price table of one agent: `LLM_PRICES` first, then the built-in table.
#[derive(Debug, Clone, Default)]
pub struct PriceBook {
    overrides: Vec<(String, ModelPrice)>,
}

impl PriceBook {
    pub fn new(overrides: &[(String, ModelPrice)]) -> Self {
        PriceBook { overrides: overrides.iter().map(|(m, p)| (normalize(m), *p)).collect() }
    }

    /// The price of `model`, if the overrides or the table know it.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        let name = normalize(model);
        if let Some((_, p)) = self.overrides.iter().find(|(m, _)| *m == name) {
            return Some(*p);
        }
        BUILT_IN.iter().find(|(m, _)| normalize(m) == name).map(|(_, p)| *p)
    }
}

/// What `usage` cost at `price`, in USD.
pub fn cost(price: &ModelPrice, usage: &Usage) -> f64 {
    (usage.input as f64 * price.input
        + usage.output as f64 * price.output
        + usage.cache_read as f64 * price.cache_read
        + usage.cache_write_5m() as f64 * price.cache_write
        + usage.cache_write_1h.min(usage.cache_write) as f64 * price.cache_write_1h)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_compared_without_dates_vendors_or_dots() {
        for (raw, want) in [
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
            ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
            ("claude-sonnet-5-5[1m]", "claude-sonnet-5-5"),
            ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
            ("openai/GPT-5.4-mini", "gpt-5-4-mini"),
            ("o3", "o3"),
        ] {
            assert_eq!(normalize(raw), want, "{raw}");
        }
    }

    #[test]
    fn known_models_have_prices_and_unknown_ones_none() {
        let book = PriceBook::default();
        let sonnet = book.price("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!((sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write), (3.0, 15.0, 0.3, 3.75));
        assert_eq!(book.price("gpt-4o-mini-2024-07-18").unwrap().cache_read, 0.075);
        assert_eq!(book.price("gpt-5.4").unwrap().input, 2.5);
        assert_ne!(book.price("gpt-5.4").unwrap(), book.price("gpt-5").unwrap(), "gpt-5.4 is not gpt-5");
        assert!(book.price("llama3.1:8b").is_none());
        assert!(book.price("claude-test").is_none());
        // One table, no accidental duplicates after normalising.
        let mut names: Vec<String> = BUILT_IN.iter().map(|(m, _)| normalize(m)).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn overrides_win_and_add_models() {
        let mine = ModelPrice { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 1.5, cache_write_1h: 2.0 };
        let book = PriceBook::new(&[("Claude-Sonnet-4.5".into(), mine), ("my-llama".into(), mine)]);
        assert_eq!(book.price("claude-sonnet-4-5-20250929"), Some(mine));
        assert_eq!(book.price("my-llama"), Some(mine));
        assert_eq!(book.price("gpt-4o").unwrap().input, 2.5, "the rest of the table stays");
    }

    #[test]
    fn a_calls_cost_is_each_kind_of_token_at_its_price() {
        let sonnet = PriceBook::default().price("claude-sonnet-4-5").unwrap();
        // 1,000 fresh input, 500 output, 20,000 read, 2,000 written.
        let c = cost(&sonnet, &Usage::new(1_000, 500, 20_000, 2_000));
        let want = (1_000.0 * 3.0 + 500.0 * 15.0 + 20_000.0 * 0.3 + 2_000.0 * 3.75) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        assert!((want - 0.024).abs() < 1e-12);
    }

    #[test]
    fn an_hours_cache_writes_cost_twice_the_input_price() {
        let sonnet = PriceBook::default().price("claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.cache_write_1h, 6.0, "2 × $3");
        assert_eq!(PriceBook::default().price("claude-haiku-4-5").unwrap().cache_write_1h, 2.0);
        // 10,000 written: 2,000 for 5 minutes, 8,000 for an hour.
        let c = cost(&sonnet, &Usage::new(100, 10, 0, 10_000).with_1h_writes(8_000));
        let want = (100.0 * 3.0 + 10.0 * 15.0 + 2_000.0 * 3.75 + 8_000.0 * 6.0) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        // What a heartbeat's 8,000-token prompt costs on Sonnet 4.5: written
        // for an hour once (4.8 ¢), read after (0.24 ¢), against 3 ¢ for
        // every 5-minute write.
        let write_1h = cost(&sonnet, &Usage::new(0, 0, 0, 8_000).with_1h_writes(8_000));
        let read = cost(&sonnet, &Usage::new(0, 0, 8_000, 0));
        let write_5m = cost(&sonnet, &Usage::new(0, 0, 0, 8_000));
        assert!((write_1h - 0.048).abs() < 1e-12 && (read - 0.0024).abs() < 1e-12 && (write_5m - 0.03).abs() < 1e-12);
        // OpenAI has no such writes; its table says so anyway.
        let gpt = PriceBook::default().price("gpt-4o").unwrap();
        assert_eq!(gpt.cache_write_1h, gpt.input);
    }
}
