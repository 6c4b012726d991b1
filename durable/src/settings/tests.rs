//! The settings as a whole: defaults, errors that name the setting, the
//! owners' ids on every platform, per-agent overrides.

use super::*;
use crate::inbound::ChannelKind;
use std::collections::HashMap;

fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn defaults_for_main() {
    let c = AgentConfig::load(&vars(&[("OWNER_IDS", "telegram:42")]), "main").unwrap();
    assert_eq!(c.llm.provider, Provider::Anthropic);
    assert_eq!(c.llm.base_url, "https://api.anthropic.com");
    assert!(c.is_owner(ChannelKind::Telegram, "42"));
    assert!(!c.is_owner(ChannelKind::Discord, "42"));
    assert_eq!(c.telegram_api_base, None);
}

#[test]
fn discord_gateway_is_on_or_off_and_anything_else_is_an_error_naming_it() {
    assert_eq!(discord_gateway(&vars(&[]), "main"), Ok(false));
    assert_eq!(discord_gateway(&vars(&[("DISCORD_GATEWAY", " On ")]), "main"), Ok(true));
    assert_eq!(
        discord_gateway(&vars(&[("DISCORD_GATEWAY", "on"), ("DISCORD_GATEWAY__WORK", "off")]), "work"),
        Ok(false)
    );
    let e = discord_gateway(&vars(&[("DISCORD_GATEWAY", "yes please")]), "main").unwrap_err();
    assert!(e.to_string().contains("DISCORD_GATEWAY") && e.to_string().contains("yes please"), "{e}");
}

#[test]
fn unknown_agents_and_bad_values_are_errors() {
    assert!(matches!(AgentConfig::load(&vars(&[]), "work"), Err(ConfigError::UnknownAgent(..))));
    let e = AgentConfig::load(&vars(&[("OWNER_IDS", "12345")]), "main").unwrap_err();
    assert!(e.to_string().contains("OWNER_IDS"), "{e}");
    let e = AgentConfig::load(&vars(&[("LLM_PROVIDER", "gemini")]), "main").unwrap_err();
    assert!(e.to_string().contains("LLM_PROVIDER"));
    let e = AgentConfig::load(&vars(&[("LLM_TIMEOUT_MS", "soon")]), "main").unwrap_err();
    assert!(e.to_string().contains("LLM_TIMEOUT_MS"));
}

#[test]
fn the_stranger_cooldown_is_an_hour_unless_set() {
    let cooldown = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.stranger_cooldown_ms);
    assert_eq!(cooldown(&[]).unwrap(), 3_600_000);
    assert_eq!(cooldown(&[("STRANGER_COOLDOWN_MINUTES", "0")]).unwrap(), 0);
    assert_eq!(cooldown(&[("STRANGER_COOLDOWN_MINUTES", "1440")]).unwrap(), 86_400_000);
    for bad in ["-5", "an hour", "1.5"] {
        let e = cooldown(&[("STRANGER_COOLDOWN_MINUTES", bad)]).unwrap_err();
        assert!(e.to_string().contains("STRANGER_COOLDOWN_MINUTES"), "{e}");
    }
}

#[test]
fn the_order_hold_is_a_tenth_of_a_second_unless_set() {
    let hold = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.order_hold_ms);
    assert_eq!(hold(&[]).unwrap(), 100);
    assert_eq!(hold(&[("ORDER_HOLD_MS", "0")]).unwrap(), 0);
    assert_eq!(hold(&[("ORDER_HOLD_MS", "400")]).unwrap(), 400);
    for bad in ["-1", "soon", "0.5"] {
        let e = hold(&[("ORDER_HOLD_MS", bad)]).unwrap_err();
        assert!(e.to_string().contains("ORDER_HOLD_MS"), "{e}");
    }
}

#[test]
fn daily_reset_is_on_at_four_unless_turned_off() {
    let daily = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.lifecycle.daily_at);
    assert_eq!(daily(&[]).unwrap(), Some((4, 0)));
    assert_eq!(daily(&[("RESET_DAILY_AT", "06:30")]).unwrap(), Some((6, 30)));
    assert_eq!(daily(&[("RESET_DAILY_AT", "off")]).unwrap(), None);
    assert_eq!(daily(&[("RESET_DAILY_AT", "OFF")]).unwrap(), None);
    assert!(daily(&[("RESET_DAILY_AT", "25:00")]).unwrap_err().to_string().contains("RESET_DAILY_AT"));
    let c = AgentConfig::load(&vars(&[]), "main").unwrap();
    assert_eq!(c.lifecycle.idle_hours, None, "idle resets stay opt-in");
}

#[test]
fn owners_on_every_platform_in_the_form_messages_carry() {
    let c = AgentConfig::load(
        &vars(&[
            ("OWNER_IDS", "slack:u012ab3cd, whatsapp:+15551234567, email:Ana@Example.com"),
            ("ALLOW_FROM", "slack:C0123ABCD,whatsapp:447700900123,email:pat@example.org"),
        ]),
        "main",
    )
    .unwrap();
    assert!(c.is_owner(ChannelKind::Slack, "U012AB3CD"));
    assert!(c.is_owner(ChannelKind::Whatsapp, "15551234567"), "WhatsApp's wa_id has no +");
    assert!(c.is_owner(ChannelKind::Email, "ana@example.com"));
    assert!(!c.is_owner(ChannelKind::Email, "pat@example.org"));
    assert!(c.is_allowed(ChannelKind::Slack, "C0123ABCD"));
    assert!(c.is_allowed(ChannelKind::Whatsapp, "447700900123"));
    assert!(c.is_allowed(ChannelKind::Email, "pat@example.org"));
    let e = AgentConfig::load(&vars(&[("OWNER_IDS", "whatsapp:555")]), "main").unwrap_err();
    assert!(e.to_string().contains("+15551234567"), "{e}");
}

#[test]
fn owner_ids_empty_unfilled_or_invalid() {
    // Empty (the shipped example) and an unfilled `telegram:` mean "no owner yet".
    for raw in ["", " ", "telegram:", "telegram: , discord:"] {
        let c = AgentConfig::load(&vars(&[("OWNER_IDS", raw)]), "main").unwrap();
        assert!(c.owners.is_empty(), "{raw:?}");
    }
    let c = AgentConfig::load(
        &vars(&[("OWNER_IDS", "telegram:, discord:123"), ("ALLOW_FROM", "telegram:-100123")]),
        "main",
    )
    .unwrap();
    assert_eq!(c.owners, vec![Principal { channel: ChannelKind::Discord, id: "123".into() }]);
    assert!(c.is_allowed(ChannelKind::Telegram, "-100123"));
    for bad in [
        "12345",
        "telegram:@olga",
        "slack:1",
        "slack:@olga",
        "telegram:12a",
        "discord:-5",
        "telegram:-",
        "whatsapp:+1 555",
        "whatsapp:12",
        "email:olga",
        "email:olga@localhost",
        "irc:olga",
        "notify:1",
    ] {
        let e = AgentConfig::load(&vars(&[("OWNER_IDS", bad)]), "main").unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { name, .. } if name == "OWNER_IDS"), "{bad:?}: {e}");
    }
}

#[test]
fn memory_conversation_ranking_reads_its_setting() {
    let r = memory_conversation_ranking(&vars(&[]), "main").unwrap();
    assert_eq!(r, hearth_memory::conversation::Ranking::default());
    let v = vars(&[("MEMORY_CONVERSATION_RANKING__WORK", "session=0,recall_floor=0.4")]);
    let work = memory_conversation_ranking(&v, "work").unwrap();
    assert_eq!((work.session, work.recall_floor, work.window), (0.0, 0.4, r.window));
    let bad = vars(&[("MEMORY_CONVERSATION_RANKING", "window=-1")]);
    assert!(memory_conversation_ranking(&bad, "main").unwrap_err().to_string().contains("MEMORY_CONVERSATION_RANKING"));
}

#[test]
fn memory_bm25_parameters() {
    let defaults = AgentConfig::load(&vars(&[]), "main").unwrap().memory_bm25;
    assert_eq!(defaults, hearth_memory::Bm25Params { k1: 1.2, b: 0.75 });
    let v = vars(&[("AGENTS", "main,work"), ("MEMORY_BM25_K1", "0.9"), ("MEMORY_BM25_B__WORK", "0.4")]);
    assert_eq!(AgentConfig::load(&v, "main").unwrap().memory_bm25, hearth_memory::Bm25Params { k1: 0.9, b: 0.75 });
    assert_eq!(AgentConfig::load(&v, "work").unwrap().memory_bm25, hearth_memory::Bm25Params { k1: 0.9, b: 0.4 });
    for (name, bad) in [
        ("MEMORY_BM25_K1", "fast"),
        ("MEMORY_BM25_K1", "-1"),
        ("MEMORY_BM25_K1", "inf"),
        ("MEMORY_BM25_B", "1.5"),
        ("MEMORY_BM25_B", "NaN"),
    ] {
        let e = AgentConfig::load(&vars(&[(name, bad)]), "main").unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
        assert!(e.to_string().contains(bad), "{e}");
    }
}

#[test]
fn the_cache_lifetime_setting() {
    let policy = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.llm.cache_policy);
    assert_eq!(policy(&[]).unwrap(), CachePolicy::Auto);
    assert_eq!(policy(&[("LLM_CACHE_TTL", "5M")]).unwrap(), CachePolicy::FiveMinutes);
    assert_eq!(policy(&[("LLM_CACHE_TTL__MAIN", "1h")]).unwrap(), CachePolicy::OneHour);
    let e = policy(&[("LLM_CACHE_TTL", "3600")]).unwrap_err();
    assert!(e.to_string().contains("LLM_CACHE_TTL") && e.to_string().contains("auto, 5m or 1h"), "{e}");
}

#[test]
fn the_output_limit_is_named_as_the_model_wants() {
    let param = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.llm.max_tokens_param);
    let openai = |model: &'static str| [("LLM_PROVIDER", "openai"), ("LLM_MODEL", model)];
    for model in ["gpt-5", "gpt-5.1-mini", "o1", "o3-mini", "o4-mini", "openai/gpt-5-nano", "O3"] {
        assert_eq!(param(&openai(model)).unwrap(), MaxTokensParam::MaxCompletionTokens, "{model}");
    }
    for model in ["gpt-4o-mini", "gpt-4.1", "llama3.1:8b", "openchat", "omni-moderation"] {
        assert_eq!(param(&openai(model)).unwrap(), MaxTokensParam::MaxTokens, "{model}");
    }
    assert_eq!(param(&[("LLM_MODEL", "o3")]).unwrap(), MaxTokensParam::MaxTokens, "Anthropic: max_tokens");
    let chosen = [("LLM_PROVIDER", "openai"), ("LLM_MODEL", "gpt-5"), ("LLM_MAX_TOKENS_PARAM", "max_tokens")];
    assert_eq!(param(&chosen).unwrap(), MaxTokensParam::MaxTokens, "the setting wins");
    let e = param(&[("LLM_MAX_TOKENS_PARAM", "max_output_tokens")]).unwrap_err();
    assert!(matches!(&e, ConfigError::Invalid { name, .. } if name == "LLM_MAX_TOKENS_PARAM"), "{e}");
}

#[test]
fn per_agent_overrides() {
    let v = vars(&[
        ("AGENTS", "main, work-2"),
        ("LLM_MODEL", "m-main"),
        ("LLM_MODEL__WORK_2", "m-work"),
        ("LLM_PROVIDER", "openai"),
    ]);
    assert_eq!(AgentConfig::load(&v, "main").unwrap().llm.model, "m-main");
    let w = AgentConfig::load(&v, "work-2").unwrap();
    assert_eq!(w.llm.model, "m-work");
    assert_eq!(w.llm.base_url, "https://api.openai.com/v1");
}

/// Every switch takes every on and off word of the one list, in any case:
/// the union of the words each took before, so a value that worked for one
/// of them still means what it meant.
#[test]
fn every_switch_takes_every_on_and_off_word_in_any_case() {
    type Read = fn(&HashMap<String, String>) -> Result<bool, ConfigError>;
    let switches: &[(&str, Read)] = &[
        ("DISCORD_GATEWAY", |v| discord_gateway(v, "main")),
        ("VOICE_REPLY_TO_VOICE", |v| voice::VoiceConfig::load(v, "main").map(|c| c.reply_to_voice)),
        ("LLM_VISION", |v| media::MediaConfig::load(v, "main").map(|c| c.vision)),
        ("USAGE_FOOTER", |v| usage::UsageSettings::load(v, "main").map(|c| c.footer)),
        ("USAGE_LEDGER", |v| usage::UsageSettings::load(v, "main").map(|c| c.ledger)),
        ("WEB_FETCH", |v| web::WebConfig::load(v, "main", Provider::Anthropic).map(|c| c.fetch)),
        ("DREAMING", |v| dreaming::DreamConfig::load(v, "main").map(|c| c.enabled)),
        ("DREAM_APPROVAL", |v| dreaming::DreamConfig::load(v, "main").map(|c| c.approval)),
        ("HEARTBEAT_ENABLED", |v| schedule::ScheduleConfig::load(v, "main").map(|c| c.heartbeat_enabled)),
        ("HEARTBEAT_RUN_PROSE", |v| {
            schedule::ScheduleConfig::load(v, "main").map(|c| c.prose == hearth_schedule::heartbeat::ProseRule::Run)
        }),
        ("CODE_MODE", |v| code::CodeConfig::load(v, "main").map(|c| c.access != code::CodeAccess::Off)),
        ("WEB_SEARCH", |v| {
            web::WebConfig::load(v, "main", Provider::Anthropic).map(|c| c.search != web::WebSearch::Off)
        }),
    ];
    let cases = |w: &str| [w.to_owned(), w.to_ascii_uppercase(), format!("{}{}", w[..1].to_ascii_uppercase(), &w[1..])];
    for (name, read) in switches {
        for (words, want) in [(read::ON_WORDS, true), (read::OFF_WORDS, false)] {
            for word in words.iter().flat_map(|w| cases(w)) {
                // WEB_SEARCH has no plain "on": which search is a word of its own.
                if *name == "WEB_SEARCH" && want {
                    continue;
                }
                let got = read(&vars(&[(name, &word)]));
                assert_eq!(got, Ok(want), "{name}={word}");
            }
        }
    }
}
