//! Media against in-memory doubles: ingest decisions, the byte-budgeted LRU,
//! hydration, transcription, and deleting a session's media across pages.

use super::hydrate::wanted_refs;

use super::*;
use crate::inbound::Inbound;
use crate::inbound::ReplyTarget;
use crate::inbound::{ChannelKind, ChatKind, SessionKey};
use crate::ports::{PutOptions, Sql};
use crate::session::deps::SessionDeps;
use crate::session::drain::drain;
use crate::session::store::SessionStore;
use crate::settings::AgentConfig;
use crate::testing::TestPlatform;
use futures::executor::block_on;
use r2_layout::{Message, UserContent};
use serde_json::json;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

const KEY: &str = "agent:main:main";

fn config(extra: &[(&str, &str)]) -> AgentConfig {
    let mut vars: HashMap<String, String> = [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k"), ("RETRY_BASE_MS", "1")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in extra {
        vars.insert(k.to_string(), v.to_string());
    }
    AgentConfig::load(&vars, "main").unwrap()
}

fn jpeg(len: usize) -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0];
    b.extend((0..len.saturating_sub(4)).map(|i| (i % 251) as u8));
    b
}

fn png(len: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.resize(len.max(8), 0);
    b
}

fn pdf(len: usize) -> Vec<u8> {
    let mut b = b"%PDF-1.4\n".to_vec();
    b.resize(len.max(9), b'x');
    b
}

fn att(handle: &str, kind: &str, mime: &str, size: Option<u64>, filename: Option<&str>) -> InboundMedia {
    InboundMedia {
        handle: handle.into(),
        mime_type: mime.into(),
        filename: filename.map(str::to_owned),
        size,
        kind: kind.into(),
    }
}

fn inbound(n: u32, text: &str, media: Vec<InboundMedia>) -> Inbound {
    Inbound {
        dedupe_key: format!("telegram:update:{n}"),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Direct,
        chat_id: "1".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: text.into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
        received_at: 0,
        media,
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    }
}

fn anthropic_text(text: &str) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
           "usage": {"input_tokens": 10, "output_tokens": 5}})
}

struct Fx {
    p: TestPlatform,
    cfg: AgentConfig,
    key: SessionKey,
    ws: RefCell<crate::workspace::WorkspaceCache>,
    load_ops: std::cell::Cell<Option<u32>>,
    cache: RefCell<MediaCache>,
    history: RefCell<crate::session::history::HistoryCache>,
    wire_memo: RefCell<crate::llm::wire::WireMemo>,
    recall: crate::memory::recall::RecallGate,
    mcp: RefCell<crate::mcp::toolset::McpState>,
    meter: RefCell<crate::session::meter_state::MeterState>,
    watch: crate::session::watch::Watch,
}

impl Fx {
    fn new(extra: &[(&str, &str)]) -> Self {
        let p = TestPlatform::default();
        SessionStore::new(&p.sql).init().unwrap();
        Fx {
            p,
            cfg: config(extra),
            key: SessionKey::parse(KEY).unwrap(),
            ws: RefCell::default(),
            load_ops: Default::default(),
            cache: RefCell::default(),
            history: RefCell::default(),
            wire_memo: RefCell::default(),
            recall: Default::default(),
            mcp: RefCell::default(),
            meter: RefCell::default(),
            watch: Default::default(),
        }
    }
    fn serve(&self, handle: &str, bytes: Vec<u8>) {
        self.p.channel.media.borrow_mut().insert(handle.into(), bytes);
    }
    fn turn(&self, m: &Inbound) {
        SessionStore::new(&self.p.sql).enqueue(&m.dedupe_key, &serde_json::to_string(m).unwrap(), 0).unwrap();
        let deps = SessionDeps {
            config: &self.cfg,
            key: &self.key,
            workspace_cache: &self.ws,
            workspace_load_ops: &self.load_ops,
            media_cache: &self.cache,
            history: &self.history,
            wire_memo: &self.wire_memo,
            recall: &self.recall,
            mcp: &self.mcp,
            meter: &self.meter,
            watch: &self.watch,
        };
        block_on(drain(&self.p, &deps)).unwrap();
    }
    fn history(&self) -> Vec<Message> {
        let store = SessionStore::new(&self.p.sql);
        store.history(&store.meta("session_id").unwrap().unwrap()).unwrap()
    }
    fn user_blocks(&self, i: usize) -> Vec<UserBlock> {
        let users: Vec<Message> = self.history().into_iter().filter(|m| matches!(m, Message::User { .. })).collect();
        match &users[i] {
            Message::User { content: UserContent::Blocks(b), .. } => b.clone(),
            other => panic!("not blocks: {other:?}"),
        }
    }
    fn media_keys(&self) -> Vec<String> {
        self.p.store.objects.borrow().keys().filter(|k| k.starts_with("media/")).cloned().collect()
    }
    fn gets(&self) -> usize {
        self.p.store.ops.borrow().iter().filter(|o| o.starts_with("get media/")).count()
    }
    fn llm_request(&self, i: usize) -> serde_json::Value {
        let reqs: Vec<usize> = self
            .p
            .http
            .requests
            .borrow()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.url.ends_with("/messages") || r.url.ends_with("/chat/completions"))
            .map(|(i, _)| i)
            .collect();
        self.p.http.request_json(reqs[i])
    }
    fn sent(&self) -> Vec<String> {
        self.p.channel.sent.borrow().iter().map(|(_, t)| t.clone()).collect()
    }
}

fn last_user_content(req: &serde_json::Value) -> Vec<serde_json::Value> {
    let msgs = req["messages"].as_array().unwrap();
    let last = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
    last["content"].as_array().cloned().unwrap_or_default()
}

// ------------------------------------------------------------ decisions

#[test]
fn classification_and_sniffing() {
    assert_eq!(classify("image/jpeg"), MediaClass::Image);
    assert_eq!(classify("IMAGE/PNG; x=y"), MediaClass::Image);
    assert_eq!(classify("image/svg+xml"), MediaClass::Other);
    assert_eq!(classify("application/pdf"), MediaClass::Pdf);
    assert_eq!(classify("audio/ogg"), MediaClass::Audio);
    assert_eq!(classify("video/mp4"), MediaClass::Video);
    assert_eq!(sniff(&jpeg(10)), Some("image/jpeg"));
    assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
    assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(sniff(b"%PDF-1.7"), Some("application/pdf"));
    assert_eq!(sniff(b"OggS"), None);
    // A screenshot sent as a file with no useful type is still an image.
    assert_eq!(effective_mime("application/octet-stream", &jpeg(10)), "image/jpeg");
    // A mislabelled image gets its real type (the API rejects mismatches).
    assert_eq!(effective_mime("image/png", &jpeg(10)), "image/jpeg");
    assert_eq!(effective_mime("audio/ogg", b"OggS...."), "audio/ogg");
    assert_eq!(effective_mime("", b"??"), "application/octet-stream");
}

#[test]
fn admission_knows_the_limits_before_downloading() {
    let mb = 1024 * 1024;
    assert_eq!(
        admit(ChannelKind::Telegram, &att("a", "photo", "image/jpeg", Some(19 * mb), None)),
        Admission::Fetch { max_bytes: 20 * mb }
    );
    assert_eq!(
        admit(ChannelKind::Telegram, &att("a", "document", "video/mp4", Some(21 * mb), None)),
        Admission::TooLarge { size: 21 * mb, limit: 20 * mb }
    );
    assert_eq!(
        admit(ChannelKind::Telegram, &att("a", "document", "x", None, None)),
        Admission::Fetch { max_bytes: 20 * mb }
    );
    assert_eq!(
        admit(ChannelKind::Discord, &att("a", "attachment", "x", Some(26 * mb), None)),
        Admission::TooLarge { size: 26 * mb, limit: 25 * mb }
    );
    assert_eq!(describe(&att("a", "document", "application/pdf", None, Some("r.pdf"))), "file \"r.pdf\"");
    assert_eq!(describe(&att("a", "voice", "audio/ogg", None, None)), "voice message");
    assert_eq!(human_size(21 * mb), "21.0 MB");
    assert_eq!(human_size(1500), "2 KB");
}

#[test]
fn config_vision_and_transcription() {
    let c = config(&[]);
    assert!(c.media.vision);
    assert_eq!(c.media.transcribe, None);
    let c = config(&[("LLM_VISION", "false"), ("TRANSCRIBE_BASE_URL", "http://t/v1/")]);
    assert!(!c.media.vision);
    let t = c.media.transcribe.unwrap();
    assert_eq!((t.base_url.as_str(), t.model.as_str(), t.api_key.as_deref()), ("http://t/v1", "whisper-1", Some("k")));
    let c = config(&[("TRANSCRIBE_BASE_URL", "http://t"), ("TRANSCRIBE_API_KEY", "tk"), ("TRANSCRIBE_MODEL", "w2")]);
    let t = c.media.transcribe.unwrap();
    assert_eq!((t.model.as_str(), t.api_key.as_deref()), ("w2", Some("tk")));
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("LLM_VISION".into(), "maybe".into());
    assert!(AgentConfig::load(&vars, "main").unwrap_err().to_string().contains("LLM_VISION"));
}

// ------------------------------------------------------------ cache

#[test]
fn lru_keeps_within_its_byte_budget_and_evicts_the_coldest() {
    let mut c = MediaCache::new(100);
    c.insert("a", Rc::new(vec![0; 40]));
    c.insert("b", Rc::new(vec![0; 40]));
    assert_eq!(c.bytes(), 80);
    assert!(c.get("a").is_some()); // a is now the most recent
    c.insert("c", Rc::new(vec![0; 40])); // 120 > 100: b goes
    assert!(c.contains("a") && c.contains("c") && !c.contains("b"));
    assert_eq!((c.bytes(), c.stats.evictions), (80, 1));
    // Replacing an entry does not count it twice.
    c.insert("c", Rc::new(vec![0; 10]));
    assert_eq!(c.bytes(), 50);
    // Larger than the whole budget: not kept, nothing else evicted; size remembered.
    c.insert("huge", Rc::new(vec![0; 101]));
    assert!(!c.contains("huge") && c.contains("a"));
    assert_eq!(c.known_size("huge"), Some(101));
    // One big entry can push out several small ones.
    c.insert("d", Rc::new(vec![0; 95])); // 145: a goes (105), then c (95)
    assert_eq!((c.len(), c.bytes(), c.stats.evictions), (1, 95, 3));
    assert_eq!(c.stats.hits, 1);
    c.forget_prefix("d");
    assert!(c.is_empty());
    assert_eq!(MediaCache::default().budget(), 50 * 1024 * 1024);
}

// ------------------------------------------------------------ ingest + hydrate through a turn

#[test]
fn a_photo_is_stored_referenced_and_shown_to_the_model() {
    let fx = Fx::new(&[]);
    let bytes = jpeg(3000);
    fx.serve("ph1", bytes.clone());
    fx.p.now.set(1_700_000_000_000);
    fx.p.http.push_json(200, anthropic_text("a cat"));
    fx.turn(&inbound(1, "what is this?", vec![att("ph1", "photo", "image/jpeg", Some(3000), None)]));

    let keys = fx.media_keys();
    assert_eq!(keys.len(), 1);
    let key = &keys[0];
    assert!(key.starts_with("media/agent:main:main/") && key.ends_with(".jpg"), "{key}");
    let obj = fx.p.store.objects.borrow()[key].clone();
    assert_eq!(obj.body, bytes);
    assert_eq!(obj.content_type.as_deref(), Some("image/jpeg"));
    assert_eq!(
        obj.custom_metadata,
        vec![
            ("originalFilename".to_string(), "".to_string()),
            ("uploadedAt".to_string(), "1700000000000".to_string()),
            ("sessionKey".to_string(), KEY.to_string()),
        ]
    );
    // The history holds the reference, never the bytes.
    let blocks = fx.user_blocks(0);
    assert!(blocks.contains(&UserBlock::Image { mime_type: "image/jpeg".into(), r2_key: key.clone() }));
    assert!(!serde_json::to_string(&fx.history()).unwrap().contains(&crate::text::base64(&bytes)));
    // The model sees the image, with the very bytes.
    let content = last_user_content(&fx.llm_request(0));
    let img = content.iter().find(|b| b["type"] == "image").expect("image block");
    assert_eq!(img["source"]["media_type"], "image/jpeg");
    assert_eq!(img["source"]["data"], crate::text::base64(&bytes));
    assert!(content.iter().any(|b| b["text"] == "what is this?"));
    // Just stored, so still in memory: no R2 read for the first call.
    assert_eq!(fx.gets(), 0);
    assert_eq!(fx.sent(), vec!["a cat"]);
}

#[test]
fn repeated_calls_over_one_image_read_r2_once() {
    let fx = Fx::new(&[]);
    fx.serve("ph", jpeg(500));
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(1, "", vec![att("ph", "photo", "image/jpeg", None, None)]));
    // A caption-less photo has no empty text block (the API rejects those).
    assert!(!fx.user_blocks(0).iter().any(|b| matches!(b, UserBlock::Text { text } if text.is_empty())));
    // A fresh object (cache lost) and two more turns: one R2 read in all.
    *fx.cache.borrow_mut() = MediaCache::default();
    fx.p.http.push_json(200, anthropic_text("one"));
    fx.turn(&inbound(2, "and now?", vec![]));
    fx.p.http.push_json(200, anthropic_text("two"));
    fx.turn(&inbound(3, "still there?", vec![]));
    assert_eq!(fx.gets(), 1);
    let s = fx.cache.borrow().stats;
    assert_eq!((s.r2_reads, s.hits), (1, 1));
    for i in 1..3 {
        let req = fx.llm_request(i);
        let has_image = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "image")));
        assert!(has_image, "call {i} lacks the image");
    }
}

#[test]
fn oversize_media_is_refused_without_downloading_and_the_text_still_gets_its_turn() {
    let fx = Fx::new(&[]);
    fx.serve("big", vec![0; 10]);
    fx.p.http.push_json(200, anthropic_text("answered"));
    fx.turn(&inbound(
        1,
        "here's the video",
        vec![att("big", "video", "video/mp4", Some(21 * 1024 * 1024), Some("v.mp4"))],
    ));
    assert!(fx.p.channel.fetched.borrow().is_empty(), "no download attempted");
    assert!(fx.media_keys().is_empty());
    let sent = fx.sent();
    assert!(sent[0].contains("too large") && sent[0].contains("21.0 MB") && sent[0].contains("20.0 MB"), "{sent:?}");
    assert_eq!(sent[1], "answered");
    let content = last_user_content(&fx.llm_request(0));
    assert!(content.iter().any(|b| b["text"] == "here's the video"));
    assert!(content.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains("too large to keep"))));

    // Size unknown up front: the channel refuses it while fetching.
    let fx = Fx::new(&[]);
    fx.serve("big2", vec![0; 20 * 1024 * 1024 + 1]);
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(1, "doc", vec![att("big2", "document", "application/zip", None, Some("a.zip"))]));
    assert!(fx.media_keys().is_empty());
    assert!(fx.sent()[0].contains("too large"));
}

#[test]
fn documents_images_as_files_and_pdfs() {
    let fx = Fx::new(&[]);
    let shot = jpeg(800);
    let doc = pdf(1200);
    fx.serve("shot", shot.clone());
    fx.serve("doc", doc.clone());
    fx.serve("zip", b"PK\x03\x04zip".to_vec());
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(
        1,
        "files",
        vec![
            att("shot", "document", "application/octet-stream", Some(800), Some("screen.jpg")),
            att("doc", "document", "application/pdf", Some(1200), Some("report.pdf")),
            att("zip", "document", "application/zip", None, Some("a.zip")),
        ],
    ));
    let blocks = fx.user_blocks(0);
    let keys = fx.media_keys();
    assert_eq!(keys.len(), 3);
    assert!(
        matches!(&blocks[1], UserBlock::Image { mime_type, r2_key } if mime_type == "image/jpeg" && r2_key.ends_with(".jpg"))
    );
    assert!(matches!(&blocks[2], UserBlock::File { mime_type, r2_key, filename }
        if mime_type == "application/pdf" && r2_key.ends_with(".pdf") && filename.as_deref() == Some("report.pdf")));
    assert!(matches!(&blocks[3], UserBlock::File { r2_key, .. } if r2_key.ends_with(".bin")));
    let pdf_key = keys.iter().find(|k| k.ends_with(".pdf")).unwrap();
    assert_eq!(fx.p.store.objects.borrow()[pdf_key].custom_metadata[0].1, "report.pdf");
    let content = last_user_content(&fx.llm_request(0));
    assert!(content.iter().any(|b| b["type"] == "image" && b["source"]["data"] == crate::text::base64(&shot)));
    let d = content.iter().find(|b| b["type"] == "document").expect("document block");
    assert_eq!(d["source"]["media_type"], "application/pdf");
    assert_eq!(d["source"]["data"], crate::text::base64(&doc));
    assert!(content.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains("a.zip"))));
}

#[test]
fn ingest_is_idempotent_when_a_turn_is_resumed() {
    let fx = Fx::new(&[]);
    fx.serve("p", jpeg(100));
    let m = inbound(1, "x", vec![att("p", "photo", "image/jpeg", None, None)]);
    let store = SessionStore::new(&fx.p.sql);
    store.enqueue(&m.dedupe_key, "{}", 0).unwrap();
    let first = block_on(ingest(&fx.p, &fx.cfg, KEY, 1, &m, &fx.cache)).unwrap();
    let puts = fx.p.store.ops.borrow().iter().filter(|o| o.starts_with("put ")).count();
    // The object died before the message was started: the ingest runs again.
    let again = block_on(ingest(&fx.p, &fx.cfg, KEY, 1, &m, &fx.cache)).unwrap();
    assert_eq!(first, again);
    assert_eq!(fx.p.channel.fetched.borrow().len(), 1);
    assert_eq!(fx.p.store.ops.borrow().iter().filter(|o| o.starts_with("put ")).count(), puts);
    assert_eq!(fx.media_keys().len(), 1);

    // Interrupted during the upload (uuid recorded, no result): the retry
    // writes the same key, so there is still one object.
    fx.p.sql.exec("UPDATE media_ingest SET blocks = NULL", &[]).unwrap();
    let third = block_on(ingest(&fx.p, &fx.cfg, KEY, 1, &m, &fx.cache)).unwrap();
    assert_eq!(third, first);
    assert_eq!(fx.media_keys().len(), 1);

    // A refusal notice is not repeated either.
    let big = inbound(2, "x", vec![att("b", "video", "video/mp4", Some(u64::MAX), None)]);
    block_on(ingest(&fx.p, &fx.cfg, KEY, 2, &big, &fx.cache)).unwrap();
    block_on(ingest(&fx.p, &fx.cfg, KEY, 2, &big, &fx.cache)).unwrap();
    let queued = fx.p.sql.exec("SELECT text FROM outbox WHERE reply LIKE 'media:%'", &[]).unwrap();
    assert_eq!(queued.len(), 1, "queued in the outbox once");
    assert!(queued[0][0].as_str().is_some_and(|t| t.contains("too large")));
    // Older rows are cleared as the queue moves on.
    let rows = fx.p.sql.exec("SELECT COUNT(*) FROM media_ingest WHERE seq = 1", &[]).unwrap();
    assert_eq!(rows[0][0].as_i64(), Some(0));
}

#[test]
fn failed_download_or_upload_is_a_note_and_a_message() {
    let fx = Fx::new(&[]);
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(1, "see", vec![att("missing", "photo", "image/jpeg", None, None)]));
    assert!(fx.sent()[0].contains("couldn't download your photo"));
    assert!(fx
        .user_blocks(0)
        .iter()
        .any(|b| matches!(b, UserBlock::Text { text } if text.contains("could not be downloaded"))));

    let fx = Fx::new(&[]);
    fx.serve("p", jpeg(10));
    fx.p.store.fail_puts.set(true);
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(1, "see", vec![att("p", "photo", "image/jpeg", None, None)]));
    assert!(fx.sent()[0].contains("couldn't store"));
    assert_eq!(fx.sent()[1], "ok");
}

#[test]
fn a_model_without_vision_gets_a_note_instead_of_the_image() {
    let fx = Fx::new(&[("LLM_VISION", "false")]);
    fx.serve("p", jpeg(10));
    fx.serve("d", pdf(50));
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(
        1,
        "see",
        vec![att("p", "photo", "image/jpeg", None, None), att("d", "document", "application/pdf", None, Some("r.pdf"))],
    ));
    let content = last_user_content(&fx.llm_request(0));
    assert!(!content.iter().any(|b| b["type"] == "image" || b["type"] == "document"));
    assert!(content.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains("cannot see images"))));
    assert!(content.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains("r.pdf"))));
    // The history keeps the reference: switching to a vision model shows it again.
    assert!(fx.user_blocks(0).iter().any(|b| matches!(b, UserBlock::Image { .. })));
}

#[test]
fn hydration_loads_only_what_the_encoder_uses() {
    let history = |blocks: Vec<UserBlock>| {
        vec![Message::User { content: UserContent::Blocks(blocks), sender: None, channel: None, timestamp: 0 }]
    };
    let img = UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/i.png".into() };
    let doc = UserBlock::File { mime_type: "application/pdf".into(), r2_key: "media/k/d.pdf".into(), filename: None };
    let ogg = UserBlock::File { mime_type: "audio/ogg".into(), r2_key: "media/k/v.ogg".into(), filename: None };
    let h = history(vec![img.clone(), doc.clone(), ogg.clone()]);
    let keys = |cfg: &AgentConfig| wanted_refs(cfg, &h).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(&config(&[])), vec!["media/k/d.pdf", "media/k/i.png"]);
    assert_eq!(keys(&config(&[("LLM_PROVIDER", "openai")])), vec!["media/k/i.png"]);
    assert!(keys(&config(&[("LLM_VISION", "off")])).is_empty());

    // Missing objects and images over the provider limit become notes; the
    // borrowed history is untouched when everything is shown.
    let p = TestPlatform::default();
    let cache = RefCell::new(MediaCache::default());
    block_on(p.store.put("media/k/i.png", png(64), PutOptions::default())).unwrap();
    let cfg = config(&[]);
    let ok = block_on(prepare(&p, &cfg, &cache, &h[..]));
    assert!(matches!(ok.messages, Cow::Borrowed(_)));
    assert_eq!(ok.media.len(), 1);
    let big = png(ANTHROPIC_MAX_IMAGE_BYTES as usize + 1);
    block_on(p.store.put("media/k/i.png", big, PutOptions::default())).unwrap();
    let fresh = RefCell::new(MediaCache::default());
    let v = block_on(prepare(&p, &cfg, &fresh, &h[..]));
    assert!(v.media.is_empty());
    let text = serde_json::to_string(&*v.messages).unwrap();
    assert!(text.contains("over the model") && !text.contains("\"image\""), "{text}");
    // Its size is remembered: the next call does not read it again.
    let reads = p.store.ops.borrow().len();
    block_on(prepare(&p, &cfg, &fresh, &h[..]));
    assert_eq!(p.store.ops.borrow().iter().skip(reads).filter(|o| o.contains("i.png")).count(), 0);
    // OpenAI takes that size.
    let o = block_on(prepare(&p, &config(&[("LLM_PROVIDER", "openai")]), &fresh, &h[..]));
    assert_eq!(o.media.len(), 1);
}

#[test]
fn image_bytes_are_checked_against_their_declared_type() {
    // At ingest: a file declared as an image (or a PDF) whose bytes are not
    // one is kept as a plain file, never an image block.
    assert_eq!(effective_mime("image/png", b"hello, I am a text file\n"), "application/octet-stream");
    assert_eq!(effective_mime("application/pdf", b"<html>"), "application/octet-stream");
    assert_eq!(classify(&effective_mime("image/png", b"hello")), MediaClass::Other);
    // At hydration, for blocks stored before that: text bytes behind an
    // image block become a note; another image type is sent as what it is.
    let p = TestPlatform::default();
    p.store.put_text("media/k/text.png", "hello, I am a text file\n");
    block_on(p.store.put("media/k/real.jpg", png(64), PutOptions::default())).unwrap();
    block_on(p.store.put("media/k/fake.pdf", b"<html>".to_vec(), PutOptions::default())).unwrap();
    let h = vec![Message::User {
        content: UserContent::Blocks(vec![
            UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/text.png".into() },
            UserBlock::Image { mime_type: "image/jpeg".into(), r2_key: "media/k/real.jpg".into() },
            UserBlock::File { mime_type: "application/pdf".into(), r2_key: "media/k/fake.pdf".into(), filename: None },
        ]),
        sender: None,
        channel: None,
        timestamp: 0,
    }];
    let cache = RefCell::new(MediaCache::default());
    let v = block_on(prepare(&p, &config(&[]), &cache, &h));
    let mut shown: Vec<&String> = v.media.keys().collect();
    shown.sort();
    assert_eq!(shown, ["media/k/real.jpg"]);
    let Message::User { content: UserContent::Blocks(blocks), .. } = &v.messages[0] else { panic!() };
    assert!(matches!(&blocks[0], UserBlock::Text { text } if text.contains("not an image")), "{blocks:?}");
    assert_eq!(blocks[1], UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/real.jpg".into() });
    let body = crate::llm::anthropic::encode(
        &config(&[]).llm,
        &crate::llm::ChatRequest {
            system: "s",
            messages: &v.messages,
            tools: &[],
            media: &v.media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        },
    );
    let content = body["messages"][0]["content"].as_array().cloned().unwrap_or_default();
    let images: Vec<&serde_json::Value> = content.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["source"]["media_type"], "image/png");
    assert!(!content.iter().any(|b| b["type"] == "document"), "the fake PDF is not sent as a document");
}

#[test]
fn per_call_budget_keeps_the_newest_media() {
    let p = TestPlatform::default();
    let cache = RefCell::new(MediaCache::default());
    let mut h = Vec::new();
    for i in 0..4 {
        let key = format!("media/k/{i}.jpg");
        block_on(p.store.put(&key, jpeg(3 * 1024 * 1024), PutOptions::default())).unwrap();
        h.push(Message::User {
            content: UserContent::Blocks(vec![UserBlock::Image { mime_type: "image/jpeg".into(), r2_key: key }]),
            sender: None,
            channel: None,
            timestamp: i,
        });
    }
    let v = block_on(prepare(&p, &config(&[]), &cache, &h));
    let mut shown: Vec<&String> = v.media.keys().collect();
    shown.sort();
    assert_eq!(shown, vec!["media/k/1.jpg", "media/k/2.jpg", "media/k/3.jpg"]);
    assert!(serde_json::to_string(&v.messages[0]).unwrap().contains("older media"));
}

#[test]
fn voice_notes_are_transcribed_into_the_history() {
    let fx = Fx::new(&[("TRANSCRIBE_BASE_URL", "http://asr/v1"), ("TRANSCRIBE_API_KEY", "asr-key")]);
    let audio = b"OggS-fake-opus".to_vec();
    fx.serve("v1", audio.clone());
    fx.p.http.push_json(200, json!({"text": "buy milk tomorrow"}));
    fx.p.http.push_json(200, anthropic_text("noted"));
    fx.turn(&inbound(1, "", vec![att("v1", "voice", "audio/ogg", Some(14), None)]));
    let req = fx.p.http.requests.borrow()[0].clone();
    assert_eq!(req.url, "http://asr/v1/audio/transcriptions");
    assert!(req.headers.contains(&("authorization".into(), "Bearer asr-key".into())));
    let ct = &req.headers.iter().find(|(k, _)| k == "content-type").unwrap().1;
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
    let body = String::from_utf8_lossy(&req.body);
    assert!(
        body.contains(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"))
    );
    assert!(
        body.contains("name=\"file\"; filename=\"")
            && body.contains(".ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOggS-fake-opus\r\n")
    );
    let blocks = fx.user_blocks(0);
    assert!(
        matches!(&blocks[1], UserBlock::File { mime_type, r2_key, .. } if mime_type == "audio/ogg" && r2_key.ends_with(".ogg"))
    );
    assert!(matches!(&blocks[2], UserBlock::Text { text } if text.contains("buy milk tomorrow")));
    assert_eq!(fx.sent(), vec!["noted"]);
    let content = last_user_content(&fx.llm_request(0));
    assert!(content.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains("buy milk tomorrow"))));
    let texts: Vec<&str> = content.iter().filter_map(|b| b["text"].as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("audio/ogg") && t.contains("its transcript follows")), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("not available to you")), "the transcript is available: {texts:?}");

    // Without an endpoint: stored and described, no transcription request.
    let fx = Fx::new(&[]);
    fx.serve("v1", audio);
    fx.p.http.push_json(200, anthropic_text("ok"));
    fx.turn(&inbound(1, "", vec![att("v1", "voice", "audio/ogg", None, None)]));
    assert_eq!(fx.p.http.requests.borrow().len(), 1);
    let content = last_user_content(&fx.llm_request(0));
    assert!(content
        .iter()
        .any(|b| b["text"].as_str().is_some_and(|t| t.contains("audio/ogg") && t.contains("not available to you"))));
}

// ------------------------------------------------------------ lifecycle

#[test]
fn deleting_a_sessions_media_covers_every_page() {
    let p = TestPlatform::default();
    p.store.page_size.set(2);
    for i in 0..7 {
        p.store.put_text(&format!("media/{KEY}/{i}.jpg"), "x");
    }
    p.store.put_text("media/agent:main:telegram:dm:9/keep.jpg", "x");
    p.store.put_text("agents/main/SOUL.md", "x");
    // The store really pages.
    let first = block_on(p.store.list(&format!("media/{KEY}/"), None, None)).unwrap();
    assert_eq!((first.objects.len(), first.cursor.is_some()), (2, true));
    let n = block_on(delete_session_media(&p.store, KEY)).unwrap();
    assert_eq!(n, 7);
    let left: Vec<String> = p.store.objects.borrow().keys().cloned().collect();
    assert_eq!(left, vec!["agents/main/SOUL.md", "media/agent:main:telegram:dm:9/keep.jpg"]);
    assert_eq!(p.store.ops.borrow().iter().filter(|o| o.starts_with("list ")).count(), 5);
    assert_eq!(block_on(delete_session_media(&p.store, KEY)).unwrap(), 0);
}
